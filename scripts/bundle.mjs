/**
 * Bundles the service into one ES module (dist/bundle/main.mjs) for `npm start`: resolving and
 * compiling hundreds of small modules dominates a cold start, one file starts in a fraction of it.
 * PGlite stays external: it loads its WebAssembly and data files from its own package directory.
 */
import { build } from "esbuild"

await build({
  entryPoints: ["src/main.ts"],
  outfile: "dist/bundle/main.mjs",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  sourcemap: true,
  external: ["@electric-sql/pglite", "pg-native"],
  // CommonJS dependencies (pg, ws, prom-client) call require() for Node's built-in modules
  banner: { js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);' },
  logLevel: "warning"
})
