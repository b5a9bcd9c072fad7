/**
 * Small doors an attacker or a careless setting could open: a short ADMIN_TOKEN, webhook URLs
 * carrying credentials, the cabinet over https without HSTS, and an Origin refusal that would name
 * the origins it allows.
 */
import { spawn } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cabinet, onboard } from "../support/cabinet.js"
import { freshDatabase } from "../support/database.js"
import { errorBody } from "../support/expectations.js"
import { ROOT, SERVICE_ARGS } from "../support/paths.js"
import { request, type RunningServer, startServer } from "../support/server.js"

const PUBLIC_URL = "https://merchants.example.com"

let server: RunningServer
beforeAll(async () => {
  // behind a gateway at an https origin; the test's requests carry that origin as theirs
  server = await startServer({ env: { PUBLIC_URL } })
})
afterAll(async () => {
  await server?.stop()
})

const CREDENTIALED_URLS = ["https://user:secret@hooks.example.com/in", "https://user@hooks.example.com/in", "http://:pw@hooks.example.com/"]

describe("ADMIN_TOKEN", () => {
  it("a supplied token shorter than 32 characters refuses the start, saying why", async () => {
    const database = await freshDatabase()
    try {
      const child = spawn(process.execPath, [...SERVICE_ARGS], {
        cwd: ROOT,
        env: { ...process.env, DATA_DIR: database.dataDir, PORT: "0", OPS_PORT: "1", ADMIN_TOKEN: "short-token-of-29-characters!" },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout.on("data", (chunk) => output += chunk)
      child.stderr.on("data", (chunk) => output += chunk)
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve))
      expect(code).not.toBe(0)
      expect(output).toContain("ADMIN_TOKEN is shorter than 32 characters")
      expect(output).not.toContain("short-token-of-29-characters!")
    } finally {
      await database.drop()
    }
  })
})

describe("webhook URLs with user info", () => {
  it("are refused with 400 by the admin API, on create and on update, and nothing changes", async () => {
    const m = await server.createMerchant(undefined, "https://hooks.example.com/ok")
    for (const url of CREDENTIALED_URLS) {
      const created = await server.admin("/admin/merchants", { method: "POST", body: { name: `cred-${Math.random()}`, webhook_url: url } })
      expect([url, created.status, errorBody(created).code]).toEqual([url, 400, "ADMIN_INVALID_REQUEST"])
      const patched = await server.admin(`/admin/merchants/${m.id}`, { method: "PATCH", body: { webhook_url: url } })
      expect([url, patched.status, errorBody(patched).code]).toEqual([url, 400, "ADMIN_INVALID_REQUEST"])
    }
    const view = await server.admin(`/admin/merchants/${m.id}`)
    expect((view.json as { webhook_url: string }).webhook_url).toBe("https://hooks.example.com/ok")
  })

  it("are refused with 400 CABINET_WEBHOOK_URL_INVALID by the cabinet, and nothing changes", async () => {
    const account = await onboard(server, undefined, PUBLIC_URL)
    const set = await cabinet(server, "/webhook", {
      method: "PUT",
      cookie: account.cookie,
      origin: PUBLIC_URL,
      body: { url: "https://hooks.example.com/mine" }
    })
    expect(set.status).toBe(200)
    for (const url of CREDENTIALED_URLS) {
      const refused = await cabinet(server, "/webhook", { method: "PUT", cookie: account.cookie, origin: PUBLIC_URL, body: { url } })
      expect([url, refused.status, errorBody(refused).code]).toEqual([url, 400, "CABINET_WEBHOOK_URL_INVALID"])
    }
    const me = await cabinet(server, "/me", { cookie: account.cookie })
    expect((me.json as { webhook_url: string }).webhook_url).toBe("https://hooks.example.com/mine")
  })
})

describe("the cabinet over https", () => {
  it("every cabinet response carries Strict-Transport-Security of at least 180 days: the page, its assets, its API and its errors", async () => {
    const account = await onboard(server, undefined, PUBLIC_URL)
    const responses = [
      await request(`${server.baseUrl}/cabinet`, {}),
      await request(`${server.baseUrl}/cabinet/app.js`, {}),
      await cabinet(server, "/me", { cookie: account.cookie }),
      await cabinet(server, "/me", {}),
      await cabinet(server, "/login", { method: "POST", origin: PUBLIC_URL, body: { login: "nobody@example.com", password: "x".repeat(12), code: "000000" } })
    ]
    for (const response of responses) {
      const hsts = response.headers.get("strict-transport-security") ?? ""
      const maxAge = Number(/max-age=(\d+)/.exec(hsts)?.[1] ?? 0)
      expect([response.status, maxAge >= 180 * 24 * 3600]).toEqual([response.status, true])
    }
  })

  it("the Origin refusal names no allowed origin", async () => {
    const refused = await cabinet(server, "/login", {
      method: "POST",
      origin: "https://evil.example.net",
      body: { login: "someone@example.com", password: "x".repeat(12), code: "000000" }
    })
    expect(refused.status).toBe(403)
    expect(errorBody(refused).code).toBe("MERCHANT_ORIGIN_NOT_ALLOWED")
    expect(refused.text).not.toContain("merchants.example.com")
    expect(refused.text).not.toContain(server.baseUrl)
  })
})

describe("the cabinet over plain http", () => {
  it("sends no Strict-Transport-Security (a browser would hold a local service to https)", async () => {
    const plain = await startServer()
    try {
      const page = await request(`${plain.baseUrl}/cabinet`, {})
      expect(page.status).toBe(200)
      expect(page.headers.get("strict-transport-security")).toBeNull()
    } finally {
      await plain.stop()
    }
  })
})
