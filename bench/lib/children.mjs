/**
 * The child processes of a benchmark (the service, baselines, load generators): started with their
 * output kept, stopped with SIGTERM then SIGKILL, driven over IPC, and all killed when the
 * benchmark exits or is interrupted.
 */
import { fork, spawn } from "node:child_process"
import { log, ROOT } from "./basics.mjs"

const children = new Set()
export const childPids = () => new Set([...children].map((c) => c.pid))

const track = (child, label) => {
  children.add(child)
  let output = ""
  child.stdout?.on("data", (c) => {
    output += c
    if (output.length > 1_000_000) output = output.slice(-500_000)
  })
  child.stderr?.on("data", (c) => {
    output += c
    if (output.length > 1_000_000) output = output.slice(-500_000)
  })
  const exited = new Promise((resolve) =>
    child.once("exit", (code, signal) => {
      children.delete(child)
      resolve(code ?? signal)
    })
  )
  const stop = async (graceMs = 15_000) => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
    const timer = setTimeout(() => {
      log(`  (${label} did not exit in ${graceMs} ms: SIGKILL)`)
      child.kill("SIGKILL")
    }, graceMs)
    const code = await exited
    clearTimeout(timer)
    return code
  }
  return { child, label, output: () => output, exited, stop }
}

/** `node args` with its output kept; `stop` ends it with SIGTERM (SIGKILL after 15 s). */
export const startChild = (args, env, label) => track(spawn(process.execPath, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] }), label)

/** A forked node module with an IPC channel. */
export const forkChild = (module, args, env, label, execArgv = []) =>
  track(fork(module, args, { cwd: ROOT, env, execArgv, stdio: ["ignore", "pipe", "pipe", "ipc"] }), label)

/**
 * A forked node module once it has said it is ready (its first IPC message, returned as `ready`);
 * rejects if it exits first.
 */
export const forkReady = async (module, args, env, label, execArgv = []) => {
  const proc = forkChild(module, args, env, label, execArgv)
  const ready = await new Promise((resolve, reject) => {
    proc.child.once("message", resolve)
    proc.exited.then((code) => reject(new Error(`${label} exited ${code}: ${proc.output()}`)))
  })
  return { proc, ready }
}

/** A request/reply over a forked child's IPC channel: sends {id, ...msg}, resolves with the reply of that id. */
export const rpc = (proc) => {
  let next = 1
  const waiting = new Map()
  proc.child.on("message", (m) => {
    if (m && m.replyTo !== undefined && waiting.has(m.replyTo)) {
      waiting.get(m.replyTo)(m)
      waiting.delete(m.replyTo)
    }
  })
  proc.exited.then((code) => {
    for (const [, resolve] of waiting) resolve({ error: `${proc.label} exited with ${code}:\n${proc.output().slice(-4000)}` })
    waiting.clear()
  })
  return (msg) =>
    new Promise((resolve, reject) => {
      const id = next++
      waiting.set(id, (m) => (m.error ? reject(new Error(m.error)) : resolve(m)))
      proc.child.send({ ...msg, id })
    })
}

const onInterrupt = []
export const atInterrupt = (task) => onInterrupt.push(task)
const cleanupChildren = () => {
  for (const child of children) child.kill("SIGKILL")
}
process.on("exit", cleanupChildren)
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, async () => {
    cleanupChildren()
    for (const task of onInterrupt) await Promise.resolve().then(task).catch(() => undefined)
    process.exit(130)
  })
}
