/**
 * bench/cabinet's flood of sign-ins: each with a random login, password and code, on a new
 * connection from a random loopback address (or all from 127.0.0.1), sent on time whatever the
 * answers; every answer's status (or a timeout, a connection error) and latency.
 */
import { randomBytes } from "node:crypto"
import { request as httpRequest } from "node:http"
import { sleep } from "../lib/harness.mjs"

const SIGN_IN_TIMEOUT_MS = 10_000

/** One sign-in from `localAddress` on a new connection: its status (or "timeout" / "error") and latency. */
const signIn = (service, localAddress) =>
  new Promise((resolve) => {
    const started = performance.now()
    const body = JSON.stringify({
      login: `flood-${randomBytes(6).toString("hex")}@attacker.example`,
      password: randomBytes(9).toString("base64"),
      code: String(randomBytes(3).readUIntBE(0, 3) % 1_000_000).padStart(6, "0")
    })
    let settled = false
    const done = (status) => {
      if (settled) return
      settled = true
      resolve({ status, ms: performance.now() - started })
    }
    const req = httpRequest({
      host: "127.0.0.1",
      port: service.port,
      localAddress,
      method: "POST",
      path: "/cabinet/api/login",
      agent: false,
      headers: { origin: service.baseUrl, "content-type": "application/json", "content-length": Buffer.byteLength(body) }
    }, (res) => {
      res.resume()
      res.once("end", () => done(res.statusCode))
      res.once("error", () => done("error"))
    })
    req.setTimeout(SIGN_IN_TIMEOUT_MS, () => {
      done("timeout")
      req.destroy()
    })
    req.once("error", () => done("error"))
    req.end(body)
  })

/** A random loopback address, 127.1.0.1 to 127.254.255.254 (never 127.0.0.1). */
const randomLoopback = () => {
  const [a, b, c] = randomBytes(3)
  return `127.${1 + (a % 254)}.${b}.${1 + (c % 254)}`
}

/** `rate` sign-ins a second for `seconds`, sent on a 10 ms tick whatever the answers: every answer. */
export const flood = async (service, rate, seconds, oneAddress) => {
  const pending = []
  const started = performance.now()
  let sent = 0
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate)
    for (; sent < due; sent++) pending.push(signIn(service, oneAddress ? "127.0.0.1" : randomLoopback()))
    await sleep(10)
  }
  return Promise.all(pending)
}
