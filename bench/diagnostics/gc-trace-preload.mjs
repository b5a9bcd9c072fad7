/**
 * Preloaded into the service by promotion.mjs (NODE_OPTIONS=--import): V8's record of every
 * garbage collection (--trace-gc-nvp: pause, bytes promoted, bytes surviving in the young
 * generation...) into `${GC_TRACE}.<pid>`, and the process's time origin beside it, so that the
 * records (stamped in ms since the process started) can be matched to load windows. V8 prints to
 * stdout, so fd 1 is reopened on that file. Only the service's process traces (not the bench).
 */
import fs from "node:fs"
import v8 from "node:v8"

if (process.env.GC_TRACE && process.argv.some((arg) => arg.endsWith("main.mjs"))) {
  fs.closeSync(1)
  const fd = fs.openSync(`${process.env.GC_TRACE}.${process.pid}`, "a")
  if (fd !== 1) throw new Error(`gc-trace-preload: stdout reopened as fd ${fd}, not 1`)
  fs.writeFileSync(`${process.env.GC_TRACE}.${process.pid}.origin`, String(performance.timeOrigin))
  v8.setFlagsFromString("--trace-gc-nvp")
}
