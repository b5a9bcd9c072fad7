import { Socket } from "node:net"
import { describe, expect, it } from "vitest"
import { bodyProblemOf, GuardedRequest } from "../../src/RequestBody.js"

const LIMIT = 4 * 1024 * 1024

/** A request whose body node's parser hands over in `chunks`; what its readers get, and its problem. */
const read = async (chunks: ReadonlyArray<Buffer>) => {
  const request = new GuardedRequest(new Socket())
  request.guard(LIMIT)
  const received: Array<Buffer> = []
  const ended = new Promise<void>((resolve) => request.on("end", resolve))
  request.on("data", (chunk: Buffer) => received.push(chunk))
  for (const chunk of chunks) expect(request.push(chunk)).toBe(true)
  request.push(null)
  await ended
  return { body: Buffer.concat(received).toString("utf8"), problem: bodyProblemOf(request) }
}

describe("request bodies checked as they are read", () => {
  it("a good body reaches its readers whole, a character split across chunks included", async () => {
    const text = " {\"custom_id\": \"café ★ 😀\", \"items\": [[1, {\"a\": [2]}]]} "
    const bytes = Buffer.from(text)
    const at = bytes.indexOf(0xf0) + 2 // inside the 4-byte emoji
    expect(await read([bytes.subarray(0, at), bytes.subarray(at)])).toMatchObject({ body: text, problem: undefined })
    expect(await read([])).toMatchObject({ body: "", problem: undefined })
  })

  it("a body that is not UTF-8 reaches them empty, and says so", async () => {
    expect(await read([Buffer.from("{\"a\":\""), Buffer.from([0xff, 0xfe]), Buffer.from("\"}")])).toMatchObject({ body: "", problem: { _tag: "NotUtf8" } })
    // a sequence cut short at the end
    expect(await read([Buffer.from("{\"a\":\"x"), Buffer.from([0xe2, 0x82])])).toMatchObject({ body: "", problem: { _tag: "NotUtf8" } })
  })

  it("nesting past 32 levels names the top-level member it is in; brackets in strings do not count", async () => {
    const deep = "[".repeat(33) + "]".repeat(33)
    expect(await read([Buffer.from(` {"a": 1, "b\\"c": {"x": ${deep}}}`)])).toMatchObject({ body: "", problem: { _tag: "TooDeep", field: "b\"c" } })
    expect(await read([Buffer.from(deep)])).toMatchObject({ problem: { _tag: "TooDeep", field: undefined } })
    expect(await read([Buffer.from(` ["a", "b", ${deep}]`)])).toMatchObject({ problem: { _tag: "TooDeep", field: undefined } })
    // 32 levels with the object itself
    const inString = `{"a": "${"[".repeat(100)}", "b": ${"[".repeat(31) + "]".repeat(31)}}`
    expect(await read([Buffer.from(inString)])).toMatchObject({ body: inString, problem: undefined })
  })

  it("past the limit the rest is dropped as it comes, and the request still ends with the body", async () => {
    const mebibyte = Buffer.alloc(1024 * 1024, 0x61)
    const { body, problem } = await read(Array.from({ length: LIMIT / mebibyte.length + 2 }, () => mebibyte))
    expect([body, problem]).toEqual(["", { _tag: "TooLarge", limit: LIMIT }])
    // exactly the limit is fine
    const full = Buffer.alloc(LIMIT, 0x20)
    expect((await read([full])).problem).toBeUndefined()
  })
})
