/**
 * Bundles the service for `npm start` into dist/bundle: main.mjs, the chunks it loads, and the
 * PGlite thread's module; and the operator CLI (`npm run cli`) into cli.mjs, on its own. Resolving and compiling hundreds of small modules dominates a cold
 * start; a few bundled files start in a fraction of it. Whitespace and syntax are minified
 * (names are kept, for stack traces) because parsing is most of loading. PGlite stays external:
 * it loads its WebAssembly and data files from its own package directory.
 */
import { build } from "esbuild"
import { copyFileSync, rmSync } from "node:fs"

const common = {
  minifyWhitespace: true,
  minifySyntax: true,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  sourcemap: true,
  // CommonJS dependencies (pg, ws, prom-client) call require() for Node's built-in modules
  banner: { js: "import { createRequire as __createRequire } from \"node:module\"; const require = __createRequire(import.meta.url);" },
  logLevel: "warning"
}

// chunks are named by their content's hash: a build's would otherwise sit beside every earlier one
rmSync("dist/bundle", { recursive: true, force: true })

/**
 * @effect/platform's index re-exports HttpApiScalar, whose module holds the API reference page's
 * 3.4 MB script: through that edge the script went into a chunk that start-up loads. The service
 * takes HttpApiScalar from its own module, in src/DocsPage.ts, loaded on the first /docs request;
 * the index's re-export is an empty module, so the script stays in that page's chunk.
 */
const scalarOutOfTheIndex = {
  name: "scalar-out-of-the-index",
  setup(build) {
    build.onResolve(
      { filter: /^\.\/HttpApiScalar\.js$/ },
      (args) =>
        /@effect[\\/]platform[\\/]dist[\\/]esm[\\/]index\.js$/.test(args.importer)
          ? { path: "empty-HttpApiScalar", namespace: "scalar-out-of-the-index" }
          : undefined
    )
    build.onLoad({ filter: /.*/, namespace: "scalar-out-of-the-index" }, () => ({ contents: "export {}", loader: "js" }))
  }
}

await build({
  ...common,
  // the PGlite thread's module sits beside main.mjs, where src/Db/Pglite.ts looks for it
  entryPoints: { main: "src/main.ts", PgliteWorker: "src/Db/PgliteWorker.ts" },
  outdir: "dist/bundle",
  outExtension: { ".js": ".mjs" },
  // main.ts imports App.ts dynamically: its chunk is parsed while the database opens
  splitting: true,
  chunkNames: "[name]-[hash]",
  external: ["@electric-sql/pglite", "pg-native"],
  plugins: [scalarOutOfTheIndex]
})

// one file: a CLI run parses it in about a third of the time its hundreds of modules take
await build({ ...common, entryPoints: { cli: "src/cli.ts" }, outdir: "dist/bundle", outExtension: { ".js": ".mjs" } })

// the merchant cabinet's page (web/cabinet): its module with the QR code library, for browsers;
// the HTML and styles beside it. The service serves dist/cabinet (src/Cabinet/Page.ts).
await build({
  entryPoints: { app: "web/cabinet/app.js" },
  outdir: "dist/cabinet",
  bundle: true,
  minify: true,
  platform: "browser",
  format: "esm",
  target: "es2022",
  logLevel: "warning"
})
for (const file of ["index.html", "app.css"]) copyFileSync(`web/cabinet/${file}`, `dist/cabinet/${file}`)

// a new embedded database's files, copied by a first start instead of running initdb
await import("./pglite-initdb.mjs")
