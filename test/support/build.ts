/**
 * The compiled service and the CLI's bundle, rebuilt when a source is newer: the black-box tests
 * (globalSetup) and the chaos command start the bundle, and the CLI tests run it as `npm run cli` does.
 */
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { ROOT } from "./paths.js"

/** Builds dist/ (tsc, then the bundles) unless the bundle is newer than every source. */
export const buildIfStale = () => {
  const built = `${ROOT}dist/bundle/cli.mjs`
  const newest = (dir: string): number =>
    Math.max(0, ...readdirSync(dir, { withFileTypes: true }).map((e) => e.isDirectory() ? newest(`${dir}/${e.name}`) : statSync(`${dir}/${e.name}`).mtimeMs))
  if (existsSync(built) && statSync(built).mtimeMs >= newest(`${ROOT}src`)) return
  execFileSync(process.execPath, [`${ROOT}node_modules/typescript/bin/tsc`, "-p", `${ROOT}tsconfig.build.json`], { stdio: "inherit" })
  execFileSync(process.execPath, [`${ROOT}scripts/bundle.mjs`], { cwd: ROOT, stdio: "inherit" })
}
