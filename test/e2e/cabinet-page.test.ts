/**
 * The cabinet's web page in a real browser (Playwright driving Debian's chromium): onboarding from
 * an invite link with a TOTP code computed here, the overview, a deposit wallet whose QR code
 * decodes to exactly its address, a purchase made over the API in the list, a new API key shown
 * once, a form posted from another origin refused, sign-out and sign-in; at 1280 and 375 px wide,
 * with nothing loaded from elsewhere and the strict CSP. Screenshots of each page at both widths go
 * to .tmp/screenshots/ (not committed) for a person to look at.
 */
import jsQRModule from "jsqr"
import { mkdirSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { Browser, Page } from "playwright-core"
import { PNG } from "pngjs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { losesCreationAnswer } from "../../src/Providers/Simulator/WalletProviderSim.js"
import { hasBrowser, launchChromium } from "../support/browser.js"
import { AuthenticatorApp, invite } from "../support/cabinet.js"
import { field } from "../support/expectations.js"
import { ROOT } from "../support/paths.js"
import { bought, buyBody, loadItem, PURCHASE_ENV } from "../support/purchases.js"
import { freePort, type RunningServer, startServer } from "../support/server.js"

// jsqr is CommonJS: its default export arrives as the module itself or as its `default`
const jsQR = ((jsQRModule as unknown as { default?: unknown }).default ?? jsQRModule) as unknown as typeof jsQRModule.default

const SHOTS = `${ROOT}/.tmp/screenshots`

let server: RunningServer
let browser: Browser
beforeAll(async () => {
  if (!hasBrowser) return
  mkdirSync(SHOTS, { recursive: true })
  server = await startServer({ env: { ...PURCHASE_ENV, WALLET_ISSUANCE_ENABLED: "true" } })
  browser = await launchChromium()
}, 120_000)
afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

/** A page that records every request it makes and every error it meets (console, script, HTTP). */
const openPage = async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
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

/** Screenshots of the page as it is at 1280 and at 375 px wide; at 375 nothing may overflow sideways. */
const shoot = async (page: Page, name: string) => {
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: 900 })
    if (width === 375) expect(await page.evaluate("document.documentElement.scrollWidth"), name).toBeLessThanOrEqual(375)
    await page.screenshot({ path: `${SHOTS}/cabinet-${name}-${width}.png`, fullPage: true })
  }
  await page.setViewportSize({ width: 1280, height: 900 })
}

/** The text a QR code on the page holds, decoded from a screenshot of it. */
const decodeQr = async (page: Page, selector: string) => {
  const png = PNG.sync.read(await page.locator(selector).screenshot())
  return jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data
}

const finishInvite = async (page: Page, login: string, password: string) => {
  await page.getByRole("heading", { name: /Set up the cabinet of/ }).waitFor()
  const app = new AuthenticatorApp((await page.locator(".secret").textContent())!.trim())
  await page.getByLabel("Login (email)").fill(login)
  await page.getByLabel(/^Password/).fill(password)
  await page.getByLabel("Code from your authenticator app").fill(await app.code())
  return app
}

describe.skipIf(!hasBrowser)("the cabinet page in chromium", { timeout: 180_000 }, () => {
  it("goes from the invite to every section: QR codes that decode, a purchase in the list, a new key once, sign-out and sign-in", async () => {
    let merchant = await server.createMerchant()
    while (losesCreationAnswer(merchant.id, "tron")) merchant = await server.createMerchant()
    await server.deposit(merchant.id, 102.5)
    const token = await invite(server, merchant.id)
    const { page, problems, requests } = await openPage()

    const response = await page.goto(`${server.baseUrl}/cabinet/invite#${token}`)
    expect(response!.headers()["content-security-policy"]).toContain("default-src 'self'")
    expect(response!.headers()["content-security-policy"]).toContain("frame-ancestors 'none'")
    const app = await finishInvite(page, "owner@page.example", "a long page password")
    const setUp = new URL((await decodeQr(page, ".qr"))!)
    expect([setUp.protocol, setUp.host]).toEqual(["otpauth:", "totp"])
    expect(Object.fromEntries(setUp.searchParams)).toMatchObject({ secret: app.secret, algorithm: "SHA1", digits: "6", period: "30" })
    expect(await labelsOfEveryInput(page)).not.toContain(0)
    await shoot(page, "1-invite")
    // by keyboard: Enter in the last field submits the form
    await page.getByLabel("Code from your authenticator app").press("Enter")
    await page.getByText("Available").waitFor()
    await expect(page.getByText("101.47 USD").count()).resolves.toBeGreaterThan(0)
    await shoot(page, "2-overview")

    await page.getByRole("link", { name: "Deposit wallets" }).click()
    await page.getByRole("button", { name: "Request an address" }).first().click()
    await page.getByText("Address:").waitFor()
    const address = (await page.locator("article .mono").first().textContent())!.trim()
    expect(address).toMatch(/^T[1-9A-HJ-NP-Za-km-z]{33}$/)
    expect(await decodeQr(page, "article .qr")).toBe(address)
    await expect(page.getByText("Do not send funds").count()).resolves.toBe(0)
    await shoot(page, "3-wallets")

    await page.getByRole("link", { name: "Deposits" }).click()
    await page.getByRole("cell", { name: "101.47 USD" }).waitFor()
    await shoot(page, "4-deposits")

    const itemId = await loadItem(server, 1_234)
    await bought(server, merchant, buyBody({ itemId, maxPrice: 12.34, customId: "page-order-1" }))
    await page.getByRole("link", { name: "Purchases" }).click()
    await page.getByRole("cell", { name: "page-order-1" }).waitFor()
    await page.getByLabel("Custom id").fill("no-such-order")
    await page.getByRole("button", { name: "Filter" }).click()
    await page.getByText("Nothing yet.").waitFor()
    await page.getByLabel("Custom id").fill("page-order-1")
    await page.getByRole("button", { name: "Filter" }).click()
    await page.getByRole("cell", { name: "page-order-1" }).waitFor()
    await shoot(page, "5-purchases")

    await page.getByRole("link", { name: "Webhooks" }).click()
    await page.getByRole("textbox", { name: /Webhook URL/ }).fill("https://hooks.page.example/in")
    await page.getByRole("button", { name: "Save URL" }).click()
    await page.getByText("Webhook URL saved.").waitFor()
    await page.getByRole("cell", { name: "balance.deposited" }).waitFor()
    expect(await labelsOfEveryInput(page)).not.toContain(0)
    await shoot(page, "6-webhooks")

    await page.getByRole("link", { name: "API key" }).click()
    await page.getByText(`Current key: …${merchant.apiKey.slice(-4)}`).waitFor()
    await page.getByLabel("Code from your authenticator app").fill(await app.code())
    await page.getByRole("button", { name: "Issue a new key" }).click()
    const key = (await page.getByTestId("new-key").textContent())!.trim()
    expect(key).toMatch(/^mer_live_/)
    // the current key's line names the new key at once
    await page.getByText(`Current key: …${key.slice(-4)}`).waitFor()
    await server.merchant(key).call((client) => client.balance.getBalance())
    expect((await server.api("/balance", { key: merchant.apiKey })).status).toBe(401)
    await shoot(page, "7-key")
    // shown once: the section drawn again shows only the last 4 characters
    await page.getByRole("link", { name: "Overview" }).click()
    await page.getByRole("link", { name: "API key" }).click()
    await page.getByText(`Current key: …${key.slice(-4)}`).waitFor()
    await expect(page.getByText(key).count()).resolves.toBe(0)

    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByRole("heading", { name: "Sign in" }).waitFor()
    await shoot(page, "8-sign-in")
    expect((await page.context().cookies()).find((c) => c.name === "mer_session")).toBeUndefined()
    await page.getByLabel("Login (email)").fill("owner@page.example")
    await page.getByLabel("Password").fill("a long page password")
    await page.getByLabel("Code from your authenticator app").fill(await app.code())
    await page.getByRole("button", { name: "Sign in" }).click()
    // back where the merchant was: the API key section, with the new key's last characters
    await page.getByText(`Current key: …${key.slice(-4)}`).waitFor()
    await page.getByRole("link", { name: "Overview" }).click()
    await page.getByText("Signed in as owner@page.example").waitFor()

    // nothing from elsewhere, nothing refused by the CSP or failing in the page
    expect(requests.filter((url) => !url.startsWith(server.baseUrl))).toEqual([])
    expect(problems).toEqual([])
    await page.context().close()
  })

  it("a wallet that cannot take deposits says so, with no address to send to", async () => {
    let merchant = await server.createMerchant()
    while (!losesCreationAnswer(merchant.id, "bsc")) merchant = await server.createMerchant()
    const token = await invite(server, merchant.id)
    const { page, problems } = await openPage()
    await page.goto(`${server.baseUrl}/cabinet/invite#${token}`)
    await finishInvite(page, "lost@page.example", "a third long password")
    await page.getByRole("button", { name: "Finish set-up" }).click()
    await page.getByRole("link", { name: "Deposit wallets" }).click()
    // the second network's button: BEP-20, whose creation answer the simulator loses for this merchant
    await page.getByRole("button", { name: "Request an address" }).nth(1).click()
    await page.getByText("Do not send funds to this wallet now").waitFor()
    await expect(page.getByText("Address:").count()).resolves.toBe(0)
    await expect(page.locator(".qr").count()).resolves.toBe(0)
    await shoot(page, "9-unverified-wallet")
    // the lost answer is the 502 the page shows in its status line, not a page error
    expect(problems.filter((p) => !p.includes("/deposits/wallets") && !p.includes("status of 502"))).toEqual([])
    await page.context().close()
  })

  it("a form posted from another origin, with the merchant's cookie, is refused and changes nothing", async () => {
    const merchant = await server.createMerchant()
    const token = await invite(server, merchant.id)
    const { page } = await openPage()
    await page.goto(`${server.baseUrl}/cabinet/invite#${token}`)
    await finishInvite(page, "target@page.example", "a fourth long password")
    await page.getByRole("button", { name: "Finish set-up" }).click()
    await page.getByText("Signed in as target@page.example").waitFor()

    // another origin (another port of this host: the same site, so the SameSite cookie goes along)
    const port = await freePort()
    const attacker: Server = createServer((_request, response) => {
      response.setHeader("content-type", "text/html")
      response.end(`<form method="post" action="${server.baseUrl}/cabinet/api/webhook-secret" enctype="text/plain">
        <input name='{"code":"000000","x":"' value='"}'><button>go</button></form>`)
    })
    await new Promise<void>((resolve) => attacker.listen(port, "127.0.0.1", resolve))
    try {
      const read = () => server.adminApi.call((client) => client.merchants.getMerchant({ path: { id: merchant.id } }))
      const before = await read()
      await page.goto(`http://127.0.0.1:${port}/`)
      const [answer] = await Promise.all([
        page.waitForResponse(`${server.baseUrl}/cabinet/api/webhook-secret`),
        page.getByRole("button", { name: "go" }).click()
      ])
      expect(answer.status()).toBe(403)
      expect(field(await answer.json(), "error", "code")).toBe("MERCHANT_ORIGIN_NOT_ALLOWED")
      expect((await read()).updated_at).toBe(before.updated_at)
    } finally {
      attacker.close()
      await page.context().close()
    }
  })
})
