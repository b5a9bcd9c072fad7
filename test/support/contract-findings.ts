/**
 * The contract fuzzer's judge: each generated request sent straight to the service (its answer
 * checked by our reading of the document) and through Prism (its refusal, its violations, or the
 * service's answer it passed on), every problem kept as a finding, and the run's tallies for its
 * summary. The rules are in e2e/contract-fuzz.test.ts's and support/prism.ts's comments.
 */
import type { Agent } from "node:http"
import { type ContractDocument, label, type Operation, parseJson, responseFor, short } from "./contract-document.js"
import { arrayField, field } from "./expectations.js"
import { PRISM_ERROR, REFUSALS } from "./prism.js"
import { type Reply, sendKeptAlive } from "./raw-http.js"
import type { Auth, Generated } from "./request-arbitraries.js"

export interface Finding {
  readonly rule: string
  /** The operation, as in the document (`GET /purchases/{purchaseId}`). */
  readonly operation: string
  readonly via: "prism" | "direct"
  readonly request: string
  readonly status: number | string
  readonly detail: string
}

/** How a report names a request: method, path, auth when not the merchant's key, body, and what was broken. */
export const describeRequest = (g: { op: Operation; path: string; auth?: Auth; body?: string; note?: string }) =>
  `${g.op.method.toUpperCase()} ${g.path}${g.auth !== undefined && g.auth !== "merchant" ? ` [auth: ${g.auth}]` : ""}${
    g.body !== undefined ? ` body=${short(JSON.stringify(g.body), 300)}` : ""
  }${g.note !== undefined ? ` (${g.note})` : ""}`

export class ContractFuzzRun {
  readonly findings: Array<Finding> = []
  readonly stats = {
    generated: 0,
    prism: 0,
    direct: 0,
    forwarded: 0,
    refused: 0,
    validRequests: 0,
    forwardedInvalid: 0,
    malformedDirectOnly: 0,
    statuses: new Map<string, number>()
  }
  /** The service's statuses by operation (direct path): what the run reached. */
  private readonly byOperation = new Map<string, Map<number, number>>()
  /** Requests our ajv refuses but Prism passed on (Prism more lenient than the document): shown in the summary. */
  private readonly forwardedInvalid: Array<string> = []

  constructor(
    private readonly document: ContractDocument,
    private readonly agent: Agent,
    private readonly serviceUrl: URL,
    private readonly prismUrl: URL
  ) {}

  private count(key: string) {
    this.stats.statuses.set(key, (this.stats.statuses.get(key) ?? 0) + 1)
  }

  private send(base: URL, g: Generated) {
    return sendKeptAlive(this.agent, base, {
      method: g.op.method.toUpperCase(),
      path: g.path,
      headers: g.headers,
      ...(g.body !== undefined ? { body: g.body } : {})
    })
  }

  /** A request straight to the service, judged by our ajv. */
  async direct(g: Generated): Promise<Reply | undefined> {
    this.stats.direct++
    const request = describeRequest(g)
    const report = (status: number | string) => (rule: string, detail: string) =>
      this.findings.push({ rule, via: "direct", operation: label(g.op), request, status, detail })
    let reply: Reply
    try {
      reply = await this.send(this.serviceUrl, g)
    } catch (error) {
      report("no answer")("transport error", String(error))
      return undefined
    }
    this.count(`direct ${reply.status}`)
    const perOperation = label(g.op)
    const statuses = this.byOperation.get(perOperation) ?? new Map<number, number>()
    this.byOperation.set(perOperation, statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1))
    this.document.checkAnswer(g.op, reply, report(reply.status))
    return reply
  }

  /** The same request through Prism: its refusal, its violations, or the service's answer it passed on. */
  async throughPrism(g: Generated, valid: boolean): Promise<Reply | undefined> {
    this.stats.prism++
    const request = describeRequest(g)
    const report = (status: number | string) => (rule: string, detail: string) =>
      this.findings.push({ rule, via: "prism", operation: label(g.op), request, status, detail })
    let reply: Reply
    try {
      reply = await this.send(this.prismUrl, g)
    } catch (error) {
      report("no answer")("transport error", String(error))
      return undefined
    }
    const fromService = reply.headers["x-request-id"] !== undefined
    const body = parseJson(reply.text)
    const prismType = field(body, "type")
    const type = typeof prismType === "string" ? prismType : ""
    if (!fromService && type.startsWith(PRISM_ERROR)) {
      const kind = type.slice(PRISM_ERROR.length)
      this.count(`prism ${reply.status} ${kind}`)
      if (REFUSALS.has(kind)) {
        this.stats.refused++
        // (b) an invalid request refused before the service: fine, unless our reading finds it valid
        if (valid) report(reply.status)("Prism refused a request our ajv finds valid", short(reply.text, 600))
      } else if (kind === "VIOLATIONS") {
        // (a) the service's response breaks the document (Prism replaced it with its 500)
        report(reply.status)("Prism: response violates the document", short(JSON.stringify(field(body, "validation")), 800))
      } else {
        report(reply.status)(`Prism error ${kind}`, short(reply.text))
      }
      return reply
    }
    if (!fromService) {
      this.count(`prism ${reply.status} ${type || "?"}`)
      report(reply.status)("Prism could not get an answer from the service", short(reply.text))
      return reply
    }
    this.stats.forwarded++
    if (!valid) {
      this.stats.forwardedInvalid++
      if (this.forwardedInvalid.length < 5) this.forwardedInvalid.push(`${request} -> ${reply.status}`)
    }
    this.count(`prism-forwarded ${reply.status}`)
    if (reply.status >= 500) report(reply.status)("5xx from the service", short(reply.text))
    const header = reply.headers["sl-violations"]
    if (header !== undefined) {
      const violations = parseJson(String(header))
      const list: ReadonlyArray<unknown> = Array.isArray(violations) ? violations : [{ location: ["response"], severity: "?", message: String(header) }]
      const responseViolations = list.filter((v) => arrayField(v, "location")[0] === "response")
      if (responseViolations.length > 0) {
        report(reply.status)("Prism: response violates the document (sl-violations)", short(JSON.stringify(responseViolations), 800))
      }
    }
    if (responseFor(g.op.operation, reply.status) === undefined) {
      report(reply.status)("status not declared for the operation", `declared: ${Object.keys(g.op.operation.responses).join(",")}; body ${short(reply.text)}`)
    }
    return reply
  }

  /** The run in a few lines: requests, the ways they went, the answers, and what each operation answered straight. */
  summary(seed: number, seconds: string): { headline: string; details: string } {
    const { stats } = this
    const headline =
      `contract fuzz (seed ${seed}): ${stats.generated} generated requests (${stats.validRequests} valid per the document), ${stats.prism} through Prism ` +
      `(${stats.forwarded} forwarded, ${stats.refused} refused by Prism, ${stats.forwardedInvalid} invalid ones forwarded), ${stats.direct} straight to the service ` +
      `(${stats.malformedDirectOnly} malformed JSON bodies only there), ${seconds} s; answers: ${
        [...stats.statuses.entries()].sort().map(([k, v]) => `${k}: ${v}`).join(", ")
      }`
    const reached = [...this.byOperation.entries()].sort().map(([op, statuses]) =>
      `${op}: ${[...statuses.entries()].sort().map(([s, n]) => `${s}x${n}`).join(" ")}`
    )
    const details = `straight to the service, by operation: ${reached.join("; ")}` +
      (this.forwardedInvalid.length > 0 ? `\ninvalid per our ajv, yet forwarded by Prism: ${this.forwardedInvalid.join("; ")}` : "")
    return { headline, details }
  }

  /** Every distinct problem once, with how often it came and its first example. */
  problems(): Array<string> {
    const grouped = new Map<string, { finding: Finding; times: number }>()
    for (const f of this.findings) {
      const key = `${f.rule} | ${f.via} | ${f.operation} | ${f.status}`
      const seen = grouped.get(key)
      if (seen === undefined) grouped.set(key, { finding: f, times: 1 })
      else seen.times++
    }
    return [...grouped.entries()].map(([key, { finding, times }]) => `${key} (x${times}) e.g. ${finding.request} -> ${finding.status}: ${finding.detail}`)
  }

  /** Whether Prism itself failed to answer (then its own last words belong in the report). */
  prismTrouble(): boolean {
    return this.findings.some((f) =>
      f.via === "prism" && (f.rule === "transport error" || f.rule.startsWith("Prism error") || f.rule.startsWith("Prism could not"))
    )
  }
}
