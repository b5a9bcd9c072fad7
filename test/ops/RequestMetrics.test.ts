import { Registry } from "prom-client"
import { describe, expect, it } from "vitest"
import { makeRequestMetrics } from "../../src/Ops/RequestMetrics.js"

const sample = (text: string, line: string) => {
  const found = text.split("\n").find((l) => l.startsWith(`${line} `))
  return found === undefined ? undefined : Number(found.slice(line.length + 1))
}

describe("request metrics", () => {
  it("render as a Prometheus counter and a cumulative histogram, per label set", async () => {
    const registry = new Registry()
    const record = makeRequestMetrics(registry)
    for (const seconds of [0.0005, 0.003, 0.003, 0.2, 40]) record("api", "GET", "/items", 200, seconds)
    record("api", "GET", "/items", 400, 0.002)
    const text = await registry.metrics()
    const labels = "server=\"api\",method=\"GET\",route=\"/items\",status=\"200\""
    expect(sample(text, `http_requests_total{${labels}}`)).toBe(5)
    expect(sample(text, `http_requests_total{server="api",method="GET",route="/items",status="400"}`)).toBe(1)
    expect(sample(text, `http_request_duration_seconds_bucket{${labels},le="0.001"}`)).toBe(1)
    expect(sample(text, `http_request_duration_seconds_bucket{${labels},le="0.005"}`)).toBe(3)
    expect(sample(text, `http_request_duration_seconds_bucket{${labels},le="0.25"}`)).toBe(4)
    expect(sample(text, `http_request_duration_seconds_bucket{${labels},le="30"}`)).toBe(4)
    expect(sample(text, `http_request_duration_seconds_bucket{${labels},le="+Inf"}`)).toBe(5)
    expect(sample(text, `http_request_duration_seconds_count{${labels}}`)).toBe(5)
    expect(sample(text, `http_request_duration_seconds_sum{${labels}}`)).toBeCloseTo(40.2065, 6)
    expect(text).toContain("# TYPE http_request_duration_seconds histogram")
    expect(text).toContain("# TYPE http_requests_total counter")
  })
})
