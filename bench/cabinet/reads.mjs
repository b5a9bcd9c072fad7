/**
 * bench/cabinet's reads of the merchant API beside the sign-in flood: paced reads on keep-alive
 * connections (one read in flight on each), or wrk as fast as it can (--saturate).
 */
import { spawn } from "node:child_process"
import { percentileSorted, sleep } from "../lib/harness.mjs"
import { openConnection } from "../lib/http-connection.mjs"

/** A read not answered by then counts as a timeout. */
const READ_TIMEOUT_MS = 10_000

/**
 * Reads at `rate` a second for `seconds` over `connections` keep-alive connections, one read in
 * flight on each (a read due when none is free is not sent): rate achieved, latencies, answers.
 */
export const pacedReads = async (port, path, apiKey, rate, seconds, connections) => {
  const headers = { authorization: `Bearer ${apiKey}` }
  const idle = []
  for (let i = 0; i < connections; i++) idle.push(await openConnection("127.0.0.1", port))
  const latencies = []
  let non2xx = 0, timeouts = 0, errors = 0, skipped = 0, sent = 0
  const inFlight = new Set()
  const readOn = (connection) => {
    const started = performance.now()
    let timer
    const read = Promise.race([
      connection.request("GET", path, headers).then((res) => res.status, () => "error"),
      new Promise((resolve) => timer = setTimeout(() => resolve("timeout"), READ_TIMEOUT_MS))
    ]).then(async (status) => {
      clearTimeout(timer)
      if (status === "timeout" || status === "error") {
        if (status === "timeout") timeouts++
        else errors++
        connection.close()
        idle.push(await openConnection("127.0.0.1", port))
      } else {
        latencies.push(performance.now() - started)
        if (status !== 200) non2xx++
        idle.push(connection)
      }
      inFlight.delete(read)
    })
    inFlight.add(read)
  }
  const started = performance.now()
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate)
    for (; sent < due; sent++) {
      const connection = idle.pop()
      if (connection === undefined) skipped++
      else readOn(connection)
    }
    await sleep(5)
  }
  const elapsed = (performance.now() - started) / 1000
  const answeredInWindow = latencies.length
  await Promise.all(inFlight)
  for (const connection of idle) connection.close()
  latencies.sort((a, b) => a - b)
  return {
    rate: answeredInWindow / elapsed,
    requests: latencies.length,
    non2xx,
    timeouts,
    errors,
    skipped,
    p50: percentileSorted(latencies, 50),
    p99: percentileSorted(latencies, 99),
    max: latencies.at(-1)
  }
}

/** wrk's run as a child process (this script goes on meanwhile): rate, requests, non-2xx, socket errors. */
export const wrk = (url, apiKey, seconds, connections) =>
  new Promise((resolve, reject) => {
    const child = spawn("wrk", ["-t1", `-c${connections}`, `-d${seconds}s`, "--timeout", "10s", "-H", `Authorization: Bearer ${apiKey}`, url])
    let out = ""
    child.stdout.on("data", (c) => out += c)
    child.stderr.on("data", (c) => out += c)
    child.once("error", reject)
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`wrk failed (${code}): ${out}`))
      const errors = out.match(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/)
      resolve({
        rate: Number(out.match(/Requests\/sec:\s+([\d.]+)/)?.[1]),
        requests: Number(out.match(/(\d+) requests in/)?.[1]),
        non2xx: Number(out.match(/Non-2xx or 3xx responses: (\d+)/)?.[1] ?? 0),
        socketErrors: errors === null ? 0 : errors.slice(1, 4).map(Number).reduce((a, b) => a + b, 0),
        timeouts: errors === null ? 0 : Number(errors[4])
      })
    })
  })
