/**
 * Stoplight Prism (`prism proxy --errors`, pinned in package.json) in front of the running service,
 * validating every request and response against the service's OpenAPI document with its own
 * reading of OpenAPI 3.1, for the contract fuzzer (e2e/contract-fuzz.test.ts).
 *
 * How Prism 5.16.0 answers in proxy mode with --errors (read in @stoplight/prism-core factory.js,
 * prism-http forwarder/index.js, validator/index.js, prism-http-server server.js):
 *  - a request that breaks the document (security first: no `Authorization: Bearer …` is a 401;
 *    then body, query, path and header parameters) is answered by Prism and NOT forwarded: an
 *    `application/problem+json` body whose `type` is `https://stoplight.io/prism/errors#UNAUTHORIZED`
 *    (401) or `#UNPROCESSABLE_ENTITY` (422, also for a content type the operation does not accept);
 *    a path or method outside the document is `#NO_PATH_MATCHED_ERROR` / `#NO_METHOD_MATCHED_ERROR`.
 *  - a forwarded request's response is validated: status, media type, body and headers. With
 *    --errors, an Error-severity violation replaces the response with a 500 problem
 *    `#VIOLATIONS` listing them (locations start with "response"). A status the operation does not
 *    declare is an Error only for a 2xx: any other undeclared status is a Warning, the service's
 *    response is passed through unchanged and the warning is only in the `sl-violations` header
 *    (a JSON array of {location, severity, code, message}), so that header is read on every response.
 *  - an upstream that cannot be reached is a 500 problem with `type: "FetchError"`.
 * A response of the service always carries X-Request-Id; none of Prism's own answers does, which
 * tells (a) a forwarded response (judged by the header and our status check) from (b) Prism's own
 * refusal of an invalid request (fine, the direct copy of the request tests the service) apart.
 *
 * Prism defect worked around: Prism 5.16.0 declares Node >= 24.18 (this repository runs Node 20), and
 * on Node 20 it never answers a request whose JSON body does not parse: prism-http-server's
 * parseRequestBody catch waits for the request's 'end' or 'close' after the body was read, and on
 * Node 20 neither comes, so the connection hangs (no option avoids it: the body is parsed before
 * any validation). Malformed JSON bodies are therefore sent only straight to the service, where our
 * ajv judges the answer; every other request goes both ways.
 * Prism leniency, harmless here: it drops an empty query value (`from=`) as if the parameter were
 * absent and forwards the request; the service's answer (400) is judged like any other.
 * Prism reads this OpenAPI 3.1 document (no jsonSchemaDialect) with its draft-07 ajv; every response
 * schema of the document compiles and is applied there (checked by giving it a copy in which each
 * was made unsatisfiable: every response came back as a VIOLATIONS), so it gets the document as is.
 */
import { spawn } from "node:child_process"
import type { Agent } from "node:http"
import { ROOT } from "./paths.js"
import { sendKeptAlive } from "./raw-http.js"
import { freePort } from "./server.js"

/** The `type` of Prism's own problem answers starts with this; its kind follows. */
export const PRISM_ERROR = "https://stoplight.io/prism/errors#"

/** Prism's own refusals of a request that breaks the document (never forwarded to the service). */
export const REFUSALS = new Set(["UNAUTHORIZED", "UNPROCESSABLE_ENTITY", "INVALID_CONTENT_TYPE", "NO_PATH_MATCHED_ERROR", "NO_METHOD_MATCHED_ERROR"])

export interface RunningPrism {
  readonly url: URL
  /** The last 20,000 characters Prism wrote. */
  readonly output: () => string
  readonly stop: () => Promise<void>
}

/**
 * Prism proxying to `upstream` with the document in `docFile`, on a free port (another is tried
 * when that one is taken meanwhile), once it answers a GET of `probe.path` (with its key, on its agent).
 */
export const startPrism = async (docFile: string, upstream: string, probe: { agent: Agent; path: string; apiKey: string }): Promise<RunningPrism> => {
  for (let attempt = 1;; attempt++) {
    const port = await freePort()
    let output = ""
    const child = spawn(process.execPath, [
      `${ROOT}node_modules/.bin/prism`,
      "proxy",
      docFile,
      upstream,
      "--errors",
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
      "--verboseLevel",
      "warn"
    ], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] })
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-20_000)
    }
    child.stdout!.on("data", keep)
    child.stderr!.on("data", keep)
    const url = new URL(`http://127.0.0.1:${port}`)
    const stop = async () => {
      if (child.exitCode !== null) return
      const exited = new Promise((resolve) => child.once("exit", resolve))
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
      await exited
      clearTimeout(timer)
    }
    const deadline = Date.now() + 60_000
    for (;;) {
      if (child.exitCode !== null) break
      if (Date.now() > deadline) {
        await stop()
        throw new Error(`Prism did not answer in 60 s:\n${output}`)
      }
      const listens = await sendKeptAlive(probe.agent, url, { method: "GET", path: probe.path, headers: { authorization: `Bearer ${probe.apiKey}` } })
        .then(() => true, () => false)
      // Prism listens (whatever it answered)
      if (listens) return { url, output: () => output, stop }
      await new Promise((r) => setTimeout(r, 200))
    }
    if (!output.includes("EADDRINUSE") || attempt === 3) throw new Error(`Prism exited with ${child.exitCode}:\n${output}`)
  }
}
