/**
 * Requests as sent, byte for byte, over node:http: fetch would re-encode a string body as UTF-8,
 * always send Content-Length, and add Accept-Encoding. For bodies that are not UTF-8 or arrive
 * in chunks, bodies larger than memory, and requests whose every header the test chooses.
 */
import * as http from "node:http"
import { gunzipSync } from "node:zlib"

export interface RawAnswer {
  readonly status: number
  readonly contentType: string | undefined
  readonly text: string
  readonly json: unknown
}

/** A POST of raw bytes (fetch would re-encode a string as UTF-8); `chunked`: without Content-Length. */
export const rawPost = (url: string, body: Buffer, headers: Record<string, string>, chunked = false) =>
  new Promise<RawAnswer>((resolve, reject) => {
    const req = http.request(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers, ...(chunked ? {} : { "content-length": String(body.length) }) }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        resolve({ status: res.statusCode!, contentType: res.headers["content-type"], text, json: text === "" ? undefined : JSON.parse(text) })
      })
    })
    // a server that answers before the whole body is sent may reset the rest of it: the answer came first
    req.on("error", reject)
    req.end(body)
  })

/** POSTs `mebibytes` MiB of a JSON string's inside, streamed without Content-Length: the status. */
export const streamedPost = (url: string, headers: Record<string, string>, mebibytes: number) =>
  new Promise<number>((resolve, reject) => {
    const req = http.request(url, { method: "POST", headers: { "content-type": "application/json", ...headers } }, (res) => {
      res.resume()
      res.on("end", () => resolve(res.statusCode!))
    })
    req.on("error", reject)
    const mebibyte = Buffer.alloc(1024 * 1024, 0x61)
    let sent = 0
    const write = () => {
      while (sent < mebibytes) {
        sent++
        if (!req.write(mebibyte)) return void req.once("drain", write)
      }
      req.end("\"}")
    }
    req.write("{\"name\":\"")
    write()
  })

export interface Outgoing {
  readonly method: string
  /** Path with its query, from the root (`/api/v1/merchant/...`). */
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: string
}

export interface Reply {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly text: string
}

/**
 * One request on a kept-alive connection of `agent` with exactly the headers given (a gzip answer
 * is unzipped), retried once when a kept-alive socket was closed under it; no answer in 20 s rejects.
 */
export const sendKeptAlive = (agent: http.Agent, base: URL, out: Outgoing): Promise<Reply> => {
  const attempt = (retry: boolean): Promise<Reply> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = { ...out.headers }
      if (out.method !== "GET") headers["content-length"] = String(Buffer.byteLength(out.body ?? ""))
      const req = http.request({ host: base.hostname, port: base.port, method: out.method, path: out.path, headers, agent }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("error", reject)
        res.on("end", () => {
          let bytes = Buffer.concat(chunks)
          if (res.headers["content-encoding"] === "gzip") bytes = gunzipSync(bytes)
          resolve({ status: res.statusCode!, headers: res.headers, text: bytes.toString("utf8") })
        })
      })
      req.setTimeout(20_000, () => req.destroy(new Error("no answer in 20 s")))
      req.on("error", (error: NodeJS.ErrnoException) => {
        if (retry && req.reusedSocket && (error.code === "ECONNRESET" || error.code === "EPIPE")) resolve(attempt(false))
        else reject(error)
      })
      req.end(out.body)
    })
  return attempt(true)
}
