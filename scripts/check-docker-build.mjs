/**
 * Proves the Dockerfile without a Docker daemon (CI has none): its instructions are replayed in a
 * clean directory, as the builder would run them, and the image's command is started.
 *
 * 1. The build stage: each `COPY` takes from the repository what the build context holds (paths
 *    .dockerignore leaves out are missing, as they would be), each `ENV` is set, each `RUN` runs
 *    with `sh -c` in the stage's directory. The one exception is the dependency install
 *    (`npm ci`): it is replaced by a hard-linked copy of this checkout's node_modules, which CI's
 *    own `npm ci` installed from the same lock file (a second install would only fetch the same
 *    packages again).
 * 2. The runtime stage: its `COPY --from=build` sources must exist in the replayed build stage,
 *    its other `COPY` sources in the build context; they are copied into a second directory.
 * 3. The image's `CMD` runs there with the stage's `ENV` (ports and data directory moved to free
 *    ones) until the ops listener's /health answers 200, then SIGTERM must end it with status 0.
 * 4. `hadolint` lints the Dockerfile when it is installed (it is not a Debian package).
 *
 *   node scripts/check-docker-build.mjs
 */
import { execFileSync, spawn, spawnSync } from "node:child_process"
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { dirname, join, normalize, relative } from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..")
const started = Date.now()
const say = (line) => console.log(`[docker-build] ${line}`)
const fail = (line) => {
  console.error(`[docker-build] FAILED: ${line}`)
  process.exit(1)
}

// ---- the Dockerfile's instructions, by stage ------------------------------------------------

/** Instructions with their continuation lines joined; comments and the parser directive dropped. */
const instructions = readFileSync(join(ROOT, "Dockerfile"), "utf8")
  .replace(/\\\n/g, " ")
  .split("\n")
  .map((line) => line.trim())
  .filter((line) => line !== "" && !line.startsWith("#"))
  .map((line) => {
    const [keyword, ...rest] = line.split(/\s+/)
    return { keyword: keyword.toUpperCase(), args: rest.join(" ") }
  })

const stages = []
for (const instruction of instructions) {
  if (instruction.keyword === "FROM") {
    const [image, as, name] = instruction.args.split(/\s+/)
    stages.push({ image, name: as?.toUpperCase() === "AS" ? name : undefined, steps: [] })
  } else if (stages.length === 0) fail(`${instruction.keyword} before the first FROM`)
  else stages.at(-1).steps.push(instruction)
}
const build = stages.find((stage) => stage.name === "build")
const runtime = stages.at(-1)
if (build === undefined || runtime === build) fail("expected a stage named build and a runtime stage after it")

/** `ENV a=b c=d` or `ENV a b`. */
const envOf = (args) => {
  const pairs = args.match(/[A-Za-z_][A-Za-z0-9_]*=("[^"]*"|\S*)/g)
  if (pairs === null) {
    const [name, ...value] = args.split(/\s+/)
    return { [name]: value.join(" ") }
  }
  return Object.fromEntries(pairs.map((pair) => {
    const at = pair.indexOf("=")
    return [pair.slice(0, at), pair.slice(at + 1).replace(/^"|"$/g, "")]
  }))
}

/** `COPY [--from=x] src... dest` (the JSON form too). */
const copyOf = (args) => {
  const words = args.startsWith("[") ? JSON.parse(args) : args.split(/\s+/)
  const from = words.find((word) => word.startsWith("--from="))?.slice("--from=".length)
  const paths = words.filter((word) => !word.startsWith("--"))
  return { from, sources: paths.slice(0, -1), dest: paths.at(-1) }
}

// ---- the build context: what .dockerignore leaves in ---------------------------------------

const ignored = readFileSync(join(ROOT, ".dockerignore"), "utf8")
  .split("\n")
  .map((line) => line.trim())
  .filter((line) => line !== "" && !line.startsWith("#"))
/** True when .dockerignore keeps `path` out of the context (its patterns: names, `*.x`, `.env.*`). */
const isIgnored = (path) => {
  const parts = normalize(path).split("/")
  return ignored.some((pattern) => {
    const regex = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")}$`)
    return parts.some((_, i) => regex.test(parts.slice(0, i + 1).join("/"))) || regex.test(parts.at(-1))
  })
}
const fromContext = (source) => {
  if (isIgnored(source)) fail(`COPY ${source}: .dockerignore leaves it out of the build context`)
  const path = join(ROOT, source)
  if (!existsSync(path)) fail(`COPY ${source}: not in the repository`)
  return path
}

/**
 * Copies `sources` into `dest` (relative to the stage's directory) as Docker's COPY does; `link`
 * hard-links instead (the build stage's node_modules into the runtime's: hundreds of MB).
 */
const copyInto = (dir, workdir, sources, dest, resolve, link = false) => {
  const target = join(dir, dest.startsWith("/") ? relative("/app", dest) : join(relative("/app", workdir), dest))
  for (const source of sources) {
    const from = resolve(source)
    const into = sources.length > 1 || dest.endsWith("/") ? join(target, source.split("/").at(-1)) : target
    mkdirSync(dirname(into), { recursive: true })
    if (link) execFileSync("cp", ["-al", from, into])
    else cpSync(from, into, { recursive: true })
  }
}

/**
 * A hard-linked copy of this checkout's node_modules, in place of the install. npm rewrites its
 * own record of the tree (node_modules/.package-lock.json) in place when it prunes: that file is
 * copied, not linked, so the checkout's stays as it is.
 */
const linkNodeModules = (into) => {
  execFileSync("cp", ["-al", join(ROOT, "node_modules"), into])
  const record = join(into, ".package-lock.json")
  if (existsSync(record)) {
    copyFileSync(record, `${record}.copy`)
    renameSync(`${record}.copy`, record)
  }
}

// ---- 1. the build stage ------------------------------------------------------------------------

// inside the checkout (.tmp is ignored by git): hard links need the same file system
mkdirSync(join(ROOT, ".tmp"), { recursive: true })
const work = mkdtempSync(join(ROOT, ".tmp", "docker-build-"))
const buildDir = join(work, "build")
const runDir = join(work, "run")
mkdirSync(buildDir)
mkdirSync(runDir)
process.on("exit", () => rmSync(work, { recursive: true, force: true }))

let workdir = "/app"
const env = { ...process.env }
for (const step of build.steps) {
  if (step.keyword === "WORKDIR") workdir = step.args
  else if (step.keyword === "ENV") Object.assign(env, envOf(step.args))
  else if (step.keyword === "COPY") {
    const copy = copyOf(step.args)
    if (copy.from !== undefined) fail(`the build stage copies from ${copy.from}`)
    copyInto(buildDir, workdir, copy.sources, copy.dest, fromContext)
  } else if (step.keyword === "RUN") {
    if (/\bnpm ci\b/.test(step.args)) {
      say("RUN npm ci …: replaced by a hard-linked copy of this checkout's node_modules (same lock file)")
      if (!existsSync(join(ROOT, "node_modules"))) fail("no node_modules: run npm ci first")
      linkNodeModules(join(buildDir, "node_modules"))
      continue
    }
    say(`RUN ${step.args}`)
    const result = spawnSync("sh", ["-c", step.args], { cwd: buildDir, env, stdio: "inherit" })
    if (result.status !== 0) fail(`RUN ${step.args}: exit ${result.status}`)
  } else say(`${step.keyword} ${step.args}: not replayed`)
}

// ---- 2. the runtime stage ------------------------------------------------------------------------

workdir = "/app"
const runEnv = {}
let command
let healthcheck
for (const step of runtime.steps) {
  if (step.keyword === "WORKDIR") workdir = step.args
  else if (step.keyword === "ENV") Object.assign(runEnv, envOf(step.args))
  else if (step.keyword === "COPY") {
    const copy = copyOf(step.args)
    const resolve = copy.from === "build"
      ? (source) => {
        const path = join(buildDir, relative("/app", source))
        if (!existsSync(path)) fail(`COPY --from=build ${source}: the build stage did not make it`)
        return path
      }
      : fromContext
    copyInto(runDir, workdir, copy.sources, copy.dest, resolve, copy.from === "build")
  } else if (step.keyword === "CMD") command = JSON.parse(step.args)
  else if (step.keyword === "HEALTHCHECK") healthcheck = step.args.replace(/^.*?\bCMD\s+/, "")
}
if (!Array.isArray(command) || command[0] !== "node") fail("expected CMD [\"node\", …] in the runtime stage")

// ---- 3. the image's command starts and stops -------------------------------------------------

// two ports held at once, so that they differ
const probes = await Promise.all([0, 1].map(() =>
  new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => resolve(server))
  })
))
const [port, opsPort] = probes.map((server) => server.address().port)
await Promise.all(probes.map((server) => new Promise((resolve) => server.close(resolve))))
const serviceEnv = {
  PATH: process.env.PATH,
  ...runEnv,
  HOST: "127.0.0.1",
  OPS_HOST: "127.0.0.1",
  PORT: String(port),
  OPS_PORT: String(opsPort),
  DATA_DIR: join(runDir, "data"),
  ADMIN_TOKEN: "docker-build-check-0123456789abcdef",
  LOG_LEVEL: "warning",
  SIM_CATALOGUE_SIZE: "2000"
}
say(`CMD ${command.join(" ")} (ports ${port} and ${opsPort})`)
const child = spawn(process.execPath, command.slice(1), { cwd: runDir, env: serviceEnv, stdio: ["ignore", "pipe", "pipe"] })
let output = ""
child.stdout.on("data", (chunk) => (output += chunk))
child.stderr.on("data", (chunk) => (output += chunk))
const exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)))
const deadline = Date.now() + 60_000
for (;;) {
  if (child.exitCode !== null) fail(`the service exited with ${child.exitCode}:\n${output}`)
  if (Date.now() > deadline) {
    child.kill("SIGKILL")
    fail(`no 200 from /health within 60 s:\n${output}`)
  }
  const healthy = await fetch(`http://127.0.0.1:${opsPort}/health`).then((response) => response.ok, () => false)
  if (healthy) break
  await new Promise((resolve) => setTimeout(resolve, 200))
}
say("/health: 200")
if (healthcheck !== undefined) {
  const check = spawnSync("sh", ["-c", healthcheck], { cwd: runDir, env: serviceEnv, stdio: "inherit", timeout: 10_000 })
  if (check.status !== 0) fail(`HEALTHCHECK ${healthcheck}: exit ${check.status}`)
  say("HEALTHCHECK: exit 0")
}
child.kill("SIGTERM")
const code = await exited
if (code !== 0) fail(`SIGTERM: exit ${code}:\n${output}`)
say("SIGTERM: exit 0")

// ---- 4. the lint ---------------------------------------------------------------------------------

const hadolint = spawnSync("hadolint", [join(ROOT, "Dockerfile")], { stdio: "inherit" })
if (hadolint.error !== undefined) say("hadolint is not installed: the Dockerfile lint is skipped")
else if (hadolint.status !== 0) fail("hadolint found problems")
else say("hadolint: no problems")

say(`the Dockerfile's build and runtime stages replayed in ${Math.round((Date.now() - started) / 1000)} s`)
