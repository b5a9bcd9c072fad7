/**
 * What the fast handler's tests compare and how they reach it: the parts of an answer that must be
 * equal whichever path answered, a body re-encoded by its route's success schema, a GET on one
 * kept-alive connection, and the responses to pipelined requests read off a raw socket.
 */
import { Schema } from "effect"
import type { Agent } from "node:http"
import { request } from "node:http"
import type { Socket } from "node:net"
import { ItemPage, SearchResults } from "../../src/Catalogue/Api.js"
import { asciiJson } from "../../src/Domain/CatalogItem.js"
import { Balance } from "../../src/Merchants/Api.js"
import type { JsonResponse } from "./server.js"

/** X-RateLimit-Remaining as a number. */
export const remaining = (res: JsonResponse) => Number(res.headers.get("x-ratelimit-remaining"))

/** What must be equal whichever path answered: everything but the request id and the tokens left. */
export const comparable = (res: JsonResponse) => ({
  status: res.status,
  text: res.text,
  contentType: res.headers.get("content-type"),
  contentLength: res.headers.get("content-length"),
  limit: res.headers.get("x-ratelimit-limit")
})

/** A body decoded by a success schema and encoded again, as the service stores and sends it (characters beyond ASCII as \u escapes). */
const reencoded = <A, I>(schema: Schema.Schema<A, I>) => (text: string) =>
  asciiJson(JSON.stringify(Schema.encodeSync(schema)(Schema.decodeUnknownSync(schema)(JSON.parse(text)))))

/** Each fast route's body through the success schema it declares in the contract. */
export const reencode: Record<string, (text: string) => string> = {
  "/balance": reencoded(Balance),
  "/items": reencoded(ItemPage),
  "/items/search": reencoded(SearchResults)
}

/** A GET with a Bearer key on `agent`'s connection: the status, the text and the local port it went from. */
export const getOnAgent = (agent: Agent, url: string, key: string) =>
  new Promise<{ status: number; text: string; localPort: number }>((resolve, reject) => {
    const sent = request(url, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
      const localPort = sent.socket!.localPort!
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => text += chunk)
      res.on("end", () => resolve({ status: res.statusCode!, text, localPort }))
    })
    sent.on("error", reject)
    sent.end()
  })

/**
 * Resumes a paused socket and reads `count` HTTP/1.1 responses (each with a Content-Length) off
 * it: their bodies in order (latin1). Rejects when they have not all come in 20 s.
 */
export const pipelinedBodies = (socket: Socket, count: number) =>
  new Promise<Array<string>>((resolve, reject) => {
    const bodies: Array<string> = []
    let data = Buffer.alloc(0)
    const timer = setTimeout(() => reject(new Error(`only ${bodies.length} responses`)), 20_000)
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      for (;;) {
        const end = data.indexOf("\r\n\r\n")
        if (end < 0) break
        const length = Number(/content-length: (\d+)/i.exec(data.subarray(0, end).toString("latin1"))?.[1])
        if (data.length < end + 4 + length) break
        bodies.push(data.subarray(end + 4, end + 4 + length).toString("latin1"))
        data = data.subarray(end + 4 + length)
      }
      if (bodies.length === count) {
        clearTimeout(timer)
        resolve(bodies)
      }
    })
    socket.resume()
  })
