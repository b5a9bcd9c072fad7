/** Pre-flight address checks of webhook targets (CONTRACT 4): what counts as public, and the lookup hook. */
import type { LookupAddress } from "node:dns"
import { describe, expect, it } from "vitest"
import { checkUrl, guardedLookup, isPublicAddress, PreflightRejected, type Resolve } from "../../src/Webhooks/Targets.js"

describe("isPublicAddress", () => {
  it.each([
    "127.0.0.1",
    "127.255.0.1",
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "192.0.2.10",
    "198.51.100.7",
    "203.0.113.9",
    "198.18.0.1",
    "240.0.0.1",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd12:3456::1",
    "ff02::1",
    "2001:db8::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:7f00:1",
    "[::1]",
    "64:ff9b::a00:1",
    "not an address",
    ""
  ])("%s is not public", (address) => {
    expect(isPublicAddress(address)).toBe(false)
  })

  it.each(["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"])("%s is public", (address) => {
    expect(isPublicAddress(address)).toBe(true)
  })
})

describe("checkUrl", () => {
  const reason = (url: string | null, allowPrivate = false) => {
    const checked = checkUrl(url, allowPrivate)
    return checked instanceof PreflightRejected ? checked.message : "ok"
  }

  it("refuses no URL, a non-http(s) scheme, an unparsable URL and literal internal addresses (also in other spellings)", () => {
    expect(reason(null)).toMatch(/no webhook URL/)
    expect(reason("")).toMatch(/no webhook URL/)
    expect(reason("ftp://example.com/hook")).toMatch(/not http\(s\)/)
    expect(reason("file:///etc/passwd")).toMatch(/not http\(s\)/)
    expect(reason("not a url")).toMatch(/not a valid URL/)
    for (
      const url of [
        "http://127.0.0.1/",
        "http://[::1]:8080/",
        "http://[::ffff:127.0.0.1]/",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.1/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://0/"
      ]
    ) {
      expect(reason(url), url).toMatch(/not a public address/)
    }
  })

  it("lets public literals and names through (names are checked when connecting), and internal literals when allowed", () => {
    expect(reason("https://8.8.8.8/hook")).toBe("ok")
    expect(reason("https://hooks.example.com/x")).toBe("ok")
    expect(reason("http://127.0.0.1:9000/", true)).toBe("ok")
  })
})

describe("guardedLookup", () => {
  const lookupWith = (resolve: Resolve, allowPrivate: boolean, all: boolean) =>
    new Promise<{ error: Error | null; address: string | Array<LookupAddress> }>((done) =>
      guardedLookup(resolve, allowPrivate)("hooks.example.test", { all }, (error, address) => done({ error, address }))
    )

  const resolver = (...addresses: Array<string>): Resolve => async () => addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }))

  it("refuses a name when any of its addresses is not public, whether one or all are asked for", async () => {
    for (const all of [false, true]) {
      for (const addresses of [["127.0.0.1"], ["93.184.216.34", "10.0.0.1"], ["::ffff:127.0.0.1"], ["169.254.169.254"]]) {
        const { error } = await lookupWith(resolver(...addresses), false, all)
        expect(error, addresses.join(",")).toBeInstanceOf(PreflightRejected)
      }
    }
  })

  it("answers public addresses in the shape asked for, and anything when private targets are allowed", async () => {
    expect(await lookupWith(resolver("93.184.216.34"), false, false)).toEqual({ error: null, address: "93.184.216.34" })
    expect(await lookupWith(resolver("93.184.216.34", "2606:4700::1"), false, true)).toEqual({
      error: null,
      address: [{ address: "93.184.216.34", family: 4 }, { address: "2606:4700::1", family: 6 }]
    })
    expect((await lookupWith(resolver("127.0.0.1"), true, false)).address).toBe("127.0.0.1")
  })

  it("checks every lookup afresh: a name that turns internal between two lookups (DNS rebinding) is refused the second time", async () => {
    let calls = 0
    const rebinding: Resolve = async () => [{ address: calls++ === 0 ? "93.184.216.34" : "127.0.0.1", family: 4 }]
    expect((await lookupWith(rebinding, false, false)).error).toBeNull()
    expect((await lookupWith(rebinding, false, false)).error).toBeInstanceOf(PreflightRejected)
  })
})
