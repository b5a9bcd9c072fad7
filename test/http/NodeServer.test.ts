/**
 * A node server of the project's (src/NodeServer.ts) serving an Effect app on its one listener:
 * a body is read as JSON under the listener's prefixes, and the scope's end drains it (the
 * listener closes, a kept-alive connection is closed once idle, and the release waits for both).
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Exit, Scope } from "effect"
import { Agent, request } from "node:http"
import { connect } from "node:net"
import { describe, expect, it } from "vitest"
import { serveNode } from "../../src/NodeServer.js"

/** What the app answers: the Content-Type it was given and the body it read. */
const app = Effect.gen(function*() {
  const incoming = yield* HttpServerRequest.HttpServerRequest
  const text = yield* Effect.orElseSucceed(incoming.text, () => "(unreadable)")
  return HttpServerResponse.unsafeJson({ contentType: incoming.headers["content-type"] ?? null, text })
})

const post = (agent: Agent, port: number, path: string, body: string) =>
  new Promise<{ status: number; text: string; connection: string | undefined }>((resolve, reject) => {
    const sent = request({ agent, host: "127.0.0.1", port, path, method: "POST", headers: { "content-type": "text/plain" } }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => text += chunk)
      res.on("end", () => resolve({ status: res.statusCode!, text, connection: res.headers.connection }))
    })
    sent.on("error", reject)
    sent.end(body)
  })

describe("serveNode", () => {
  it("serves the app, reads a body as JSON under its prefixes, and drains at the scope's end", async () => {
    const scope = Effect.runSync(Scope.make())
    const port = await Effect.runPromise(
      serveNode(app, (served) => served, { bodyMaxBytes: 1024, jsonBodyPrefixes: ["/json/"], shutdownGraceSeconds: 5, port: 0, host: "127.0.0.1" }).pipe(
        Effect.provide(NodeHttpServer.layerContext),
        Scope.extend(scope)
      )
    )
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    try {
      expect(JSON.parse((await post(agent, port, "/json/x", "{\"a\":1}")).text)).toEqual({ contentType: "application/json", text: "{\"a\":1}" })
      expect(JSON.parse((await post(agent, port, "/other", "hello")).text)).toEqual({ contentType: "text/plain", text: "hello" })
      // a kept-alive connection, idle after its answer, is open when the scope ends: the release closes it and waits for it
      const idle = connect(port, "127.0.0.1")
      const answered = new Promise((resolve) => idle.once("data", resolve))
      idle.write("GET /json/y HTTP/1.1\r\nHost: x\r\n\r\n")
      await answered
      const idleClosed = new Promise((resolve) => idle.once("close", resolve))
      const closing = Effect.runPromise(Scope.close(scope, Exit.void))
      await idleClosed
      await closing
      const refused = connect(port, "127.0.0.1")
      expect(await new Promise((resolve) => refused.once("error", (error: NodeJS.ErrnoException) => resolve(error.code)))).toBe("ECONNREFUSED")
    } finally {
      agent.destroy()
    }
  })
})
