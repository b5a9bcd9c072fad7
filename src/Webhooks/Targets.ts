/**
 * Pre-flight checks of a webhook target (CONTRACT 4): only http(s) URLs, and only public addresses
 * unless WEBHOOK_ALLOW_PRIVATE_TARGETS is set. The address check runs in the lookup hook of the
 * connection itself, so the address connected to is the address checked: a name that resolves to a
 * public address for one lookup and to an internal one for the next (DNS rebinding) gets no
 * further. Classification is ipaddr.js's: anything it does not call `unicast` (loopback, private,
 * link-local, CGNAT, multicast, unspecified, documentation, reserved, IPv4-mapped private...) is
 * refused.
 */
import ipaddr from "ipaddr.js"
import { lookup as systemLookup } from "node:dns"
import type { LookupFunction } from "node:net"

/** A refusal before any byte is sent; recorded as `last_response_code` 0. */
export class PreflightRejected extends Error {
  override readonly name = "PreflightRejected"
}

export interface ResolvedAddress {
  readonly address: string
  readonly family: number
}

/** Name resolution, replaceable in tests (no test resolves a real outside name). */
export type Resolve = (hostname: string) => Promise<ReadonlyArray<ResolvedAddress>>

export const systemResolve: Resolve = (hostname) =>
  new Promise((resolve, reject) => systemLookup(hostname, { all: true, verbatim: true }, (error, addresses) => error ? reject(error) : resolve(addresses)))

/** True only for a globally routable unicast address (IPv4-mapped IPv6 is judged as its IPv4). */
export const isPublicAddress = (address: string): boolean => {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address
  if (!ipaddr.isValid(bare)) return false
  return ipaddr.process(bare).range() === "unicast"
}

/**
 * The URL to post to, or the reason it is refused before any lookup: none configured, unparsable,
 * not http(s), credentials in it, or a literal address that is not public.
 */
export const checkUrl = (url: string | null, allowPrivate: boolean): URL | PreflightRejected => {
  if (url === null || url === "") return new PreflightRejected("no webhook URL configured")
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return new PreflightRejected("webhook URL is not a valid URL")
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return new PreflightRejected(`webhook URL scheme ${parsed.protocol} is not http(s)`)
  }
  // (the setters refuse such URLs; one stored before they did is not sent its credentials)
  if (parsed.username !== "" || parsed.password !== "") return new PreflightRejected("webhook URL carries user info")
  const host = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname
  // a literal address is connected to without a lookup: it is checked here
  if (!allowPrivate && ipaddr.isValid(host) && !isPublicAddress(host)) {
    return new PreflightRejected(`webhook target ${host} is not a public address`)
  }
  return parsed
}

/**
 * The `lookup` of the attempt's connection: resolves with `resolve` and refuses the connection when
 * any address of the name is not public (unless private targets are allowed).
 */
export const guardedLookup = (resolve: Resolve, allowPrivate: boolean): LookupFunction => (hostname, options, callback) => {
  resolve(hostname).then(
    (addresses) => {
      const refused = allowPrivate ? undefined : addresses.find((a) => !isPublicAddress(a.address))
      const first = addresses[0]
      if (refused !== undefined) {
        return callback(new PreflightRejected(`webhook host ${hostname} resolves to ${refused.address}, not a public address`), "", 0)
      }
      if (first === undefined) {
        return callback(Object.assign(new Error(`webhook host ${hostname} has no address`), { code: "ENOTFOUND" }), "", 0)
      }
      if (options.all === true) return callback(null, addresses.map((a) => ({ address: a.address, family: a.family })))
      callback(null, first.address, first.family)
    },
    (error: NodeJS.ErrnoException) => callback(error, "", 0)
  )
}
