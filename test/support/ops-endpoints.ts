/**
 * What the ops listener serves, as a test reads it: /metrics parsed into samples (name, labels,
 * value) and /ops/fibers' list of supervised fibers, each answer's status and content type checked.
 */
import { Schema } from "effect"
import { expect } from "vitest"
import { field } from "./expectations.js"
import { request, type RunningServer } from "./server.js"

export interface Sample {
  readonly name: string
  readonly labels: Record<string, string>
  readonly value: number
}

/** GET /metrics (200, text/plain): its text and every sample in it. */
export const scrapeMetrics = async (server: RunningServer): Promise<{ text: string; samples: Array<Sample> }> => {
  const res = await request(`${server.opsUrl}/metrics`, {})
  expect(res.status).toBe(200)
  expect(res.headers.get("content-type") ?? "").toMatch(/^text\/plain/)
  const samples: Array<Sample> = []
  for (const line of res.text.split("\n")) {
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/)
    if (m === null) continue
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!
    samples.push({ name: m[1]!, labels, value: Number(m[3]) })
  }
  return { text: res.text, samples }
}

/** The sample of `name` whose labels include all of `labels`. */
export const findSample = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string>) =>
  samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))

/** GET /ops/fibers (200, JSON): each fiber's fields. */
export const supervisedFibers = async (server: RunningServer) => {
  const res = await request(`${server.opsUrl}/ops/fibers`, {})
  expect(res.status).toBe(200)
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/)
  return Schema.decodeUnknownSync(Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown })))(field(res.json, "fibers"))
}
