import { IncomingMessage } from "node:http"
import { Socket } from "node:net"
import { describe, expect, it } from "vitest"
import { makeOpenResponses, SlottedResponse } from "../../src/OpenResponses.js"

const response = () => new SlottedResponse(new IncomingMessage(new Socket()))

const listed = (open: ReturnType<typeof makeOpenResponses>) => {
  const all: Array<SlottedResponse> = []
  open.forEach((r) => all.push(r))
  return all
}

describe("the responses a server has not finished", () => {
  it("holds each response until it closes, and reuses the slots of those closed", () => {
    const open = makeOpenResponses()
    const [a, b, c, d] = [response(), response(), response(), response()]
    for (const r of [a, b, c]) open.add(r)
    expect([open.size(), listed(open)]).toEqual([3, [a, b, c]])
    b.emit("close")
    // a response closes once: a second event changes nothing
    b.emit("close")
    expect([open.size(), listed(open)]).toEqual([2, [a, c]])
    open.add(d)
    expect([open.size(), listed(open)]).toEqual([3, [a, d, c]])
    for (const r of [a, c, d]) r.emit("close")
    expect([open.size(), listed(open)]).toEqual([0, []])
  })
})
