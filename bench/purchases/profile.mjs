/**
 * bench/purchases --profile: one more service run at --profileAt clients under `node --cpu-prof`;
 * where the measured window's CPU went (bench/http/cpuprofile-summary.mjs), the profile kept in
 * `dir`.
 */
import { mkdirSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { printSummary, summarise } from "../http/cpuprofile-summary.mjs"
import { log } from "../lib/harness.mjs"
import { measure } from "./measure.mjs"
import { startBuyService } from "./setup.mjs"

export const profileService = async (opts, ctx, db, dataDir, dir) => {
  mkdirSync(dir, { recursive: true })
  log(`\nprofile: the service at ${opts.profileAt} clients under node --cpu-prof`)
  ctx.service = await startBuyService(opts, db, dataDir, ["--cpu-prof", "--cpu-prof-dir", dir])
  const r = await measure(opts, "service", ctx, opts.profileAt)
  await ctx.service.stop(120_000)
  ctx.service = undefined
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))
  const summary = summarise(JSON.parse(readFileSync(join(dir, file), "utf8")), { top: 30, ...r.window })
  log(`profile: ${join(dir, file)} (the measured window only)`)
  printSummary(summary, log)
  return { file: join(dir, file), run: r, summary }
}
