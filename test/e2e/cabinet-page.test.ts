/**
 * The cabinet's web page in a real browser (Playwright driving Debian's chromium): onboarding from
 * an invite link with the TOTP QR code, the overview, a deposit wallet with its address QR code, a
 * new API key shown once, at 375 px wide, with nothing loaded from elsewhere and the strict CSP.
 * Screenshots go to .tmp/screenshots/ for a person to look at.
 */
import { existsSync, mkdirSync } from "node:fs"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { losesCreationAnswer } from "../../src/Providers/Simulator/WalletProviderSim.js"
import { AuthenticatorApp, invite } from "../support/cabinet.js"
import { ROOT } from "../support/paths.js"
import { type RunningServer, startServer } from "../support/server.js"

const CHROMIUM = "/usr/bin/chromium"
const SHOTS = `${ROOT}/.tmp/screenshots`
// CI installs chromium (.ci/run); elsewhere the page tests need it installed (apt-get install chromium)
const hasBrowser = existsSync(CHROMIUM) || process.env["CI"] !== undefined

let server: RunningServer
let browser: Browser
beforeAll(async () => {
  if (!hasBrowser) return
  mkdirSync(SHOTS, { recursive: true })
  server = await startServer({ env: { WALLET_ISSUANCE_ENABLED: "true" } })
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // without the background-networking flags chromium keeps trying to reach outside hosts
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync"
    ]
  })
}, 120_000)
afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

/** A page that records every request it makes and every console error. */
const openPage = async (width: number) => {
  const context = await browser.newContext({ viewport: { width, height: 900 } })
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.baseUrl })
  const page = await context.newPage()
  const requests: Array<string> = []
  const problems: Array<string> = []
  page.on("request", (request) => requests.push(request.url()))
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(message.text())
  })
  page.on("pageerror", (error) => problems.push(String(error)))
  page.on("response", (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`)
  })
  return { page, requests, problems }
}

// evaluated in the page (the tests compile without the DOM's types)
const labelsOfEveryInput = (page: Page) =>
  page.evaluate("[...document.querySelectorAll('input, select')].map((input) => input.labels?.length ?? 0)") as Promise<Array<number>>

describe.skipIf(!hasBrowser)("the cabinet page in chromium", { timeout: 180_000 }, () => {
  it("onboards from the invite link, shows the overview, a bound wallet with its QR code, and a new key once; at 375 px, offline", async () => {
    let merchant = await server.createMerchant()
    while (losesCreationAnswer(merchant.id, "tron")) merchant = await server.createMerchant()
    await server.deposit(merchant.id, 102.5)
    const token = await invite(server, merchant.id)
    const { page, requests, problems } = await openPage(375)

    const response = await page.goto(`${server.baseUrl}/cabinet/invite#${token}`)
    expect(response!.headers()["content-security-policy"]).toContain("default-src 'self'")
    expect(response!.headers()["content-security-policy"]).toContain("frame-ancestors 'none'")
    await page.getByRole("heading", { name: /Set up the cabinet of/ }).waitFor()
    await expect(page.locator(".qr svg").count()).resolves.toBe(1)
    const secret = (await page.locator(".secret").textContent())!.trim()
    const app = new AuthenticatorApp(secret)
    expect(await labelsOfEveryInput(page)).not.toContain(0)
    await page.screenshot({ path: `${SHOTS}/cabinet-1-invite.png`, fullPage: true })

    await page.getByLabel("Login (email)").fill("owner@page.example")
    await page.getByLabel(/^Password/).fill("a long page password")
    await page.getByLabel("Code from your authenticator app").fill(await app.code())
    // by keyboard: Enter in the last field submits the form
    await page.getByLabel("Code from your authenticator app").press("Enter")
    await page.getByText("Available").waitFor()
    await expect(page.getByText("101.47 USD").count()).resolves.toBeGreaterThan(0)
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(375)
    await page.screenshot({ path: `${SHOTS}/cabinet-2-overview.png`, fullPage: true })

    await page.getByRole("link", { name: "Deposit wallets" }).click()
    await page.getByRole("button", { name: "Request an address" }).first().click()
    await page.getByText("Address:").waitFor()
    const address = (await page.locator("article .mono").first().textContent())!.trim()
    expect(address).toMatch(/^T[1-9A-HJ-NP-Za-km-z]{33}$/)
    await expect(page.locator("article .qr svg").count()).resolves.toBe(1)
    await expect(page.getByText("Do not send funds").count()).resolves.toBe(0)
    await page.screenshot({ path: `${SHOTS}/cabinet-3-wallets.png`, fullPage: true })

    await page.getByRole("link", { name: "API key" }).click()
    await page.getByText(`Current key: …${merchant.apiKey.slice(-4)}`).waitFor()
    await page.getByLabel("Code from your authenticator app").fill(await app.code())
    await page.getByRole("button", { name: "Issue a new key" }).click()
    const key = (await page.getByTestId("new-key").textContent())!.trim()
    expect(key).toMatch(/^mer_live_/)
    expect((await server.api("/balance", { key })).status).toBe(200)
    expect((await server.api("/balance", { key: merchant.apiKey })).status).toBe(401)
    await page.screenshot({ path: `${SHOTS}/cabinet-4-key.png`, fullPage: true })

    // nothing from elsewhere, nothing refused by the CSP or failing in the page
    expect(requests.filter((url) => !url.startsWith(server.baseUrl))).toEqual([])
    expect(problems).toEqual([])
    await page.context().close()
  })

  it("a wallet that cannot take deposits says so, with no address to send to", async () => {
    let merchant = await server.createMerchant()
    while (!losesCreationAnswer(merchant.id, "bsc")) merchant = await server.createMerchant()
    const token = await invite(server, merchant.id)
    const { page, problems } = await openPage(375)
    await page.goto(`${server.baseUrl}/cabinet/invite#${token}`)
    const app = new AuthenticatorApp((await page.locator(".secret").textContent())!.trim())
    await page.getByLabel("Login (email)").fill("lost@page.example")
    await page.getByLabel(/^Password/).fill("a third long password")
    await page.getByLabel("Code from your authenticator app").fill(await app.code())
    await page.getByRole("button", { name: "Finish set-up" }).click()
    await page.getByRole("link", { name: "Deposit wallets" }).click()
    // the second network's button: BEP-20, whose creation answer the simulator loses for this merchant
    await page.getByRole("button", { name: "Request an address" }).nth(1).click()
    await page.getByText("Do not send funds to this wallet now").waitFor()
    await expect(page.getByText("Address:").count()).resolves.toBe(0)
    await expect(page.locator(".qr").count()).resolves.toBe(0)
    await page.screenshot({ path: `${SHOTS}/cabinet-6-unverified-wallet.png`, fullPage: true })
    // the lost answer is the 502 the page shows in its status line, not a page error
    expect(problems.filter((p) => !p.includes("/deposits/wallets") && !p.includes("502"))).toEqual([])
    await page.context().close()
  })

  it("signs in with password and code, pages purchases and the webhook log, and signs out", async () => {
    const merchant = await server.createMerchant()
    const token = await invite(server, merchant.id)
    const { page, problems } = await openPage(1024)
    await page.goto(`${server.baseUrl}/cabinet/invite#${token}`)
    const app = new AuthenticatorApp((await page.locator(".secret").textContent())!.trim())
    await page.getByLabel("Login (email)").fill("signin@page.example")
    await page.getByLabel(/^Password/).fill("another long password")
    await page.getByLabel("Code from your authenticator app").fill(await app.code())
    await page.getByRole("button", { name: "Finish set-up" }).click()
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByRole("heading", { name: "Sign in" }).waitFor()

    await page.getByLabel("Login (email)").fill("signin@page.example")
    await page.getByLabel("Password").fill("another long password")
    await page.getByLabel("Code from your authenticator app").fill(await app.code())
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByText("Signed in as signin@page.example").waitFor()

    await page.getByRole("link", { name: "Purchases" }).click()
    await page.getByRole("button", { name: "Filter" }).waitFor()
    await page.getByLabel("Status").selectOption("completed")
    await page.getByRole("button", { name: "Filter" }).click()
    await page.getByText("Nothing yet.").waitFor()

    await page.getByRole("link", { name: "Webhooks" }).click()
    await page.getByRole("textbox", { name: /Webhook URL/ }).fill("https://hooks.page.example/in")
    await page.getByRole("button", { name: "Save URL" }).click()
    await page.getByText("Webhook URL saved.").waitFor()
    expect(await labelsOfEveryInput(page)).not.toContain(0)
    await page.screenshot({ path: `${SHOTS}/cabinet-5-webhooks.png`, fullPage: true })
    expect(problems).toEqual([])
    await page.context().close()
  })
})
