/**
 * The cabinet's web page in a real browser (Playwright driving Debian's chromium): onboarding from
 * an invite link with a TOTP code computed here, the overview, a deposit wallet whose QR code
 * decodes to exactly its address, purchases made over the API in the list (a failed one with its
 * reason and refund), a new API key shown once, a form posted from another origin refused, one
 * message for every refused sign-in, sign-out and sign-in; at 1280x800 and 390x844, with no "null",
 * "undefined" or "NaN" shown anywhere, nothing wider than a phone's screen, nothing loaded from
 * elsewhere and the strict CSP. Screenshots of each page at both sizes go to .tmp/screenshots/ (not
 * committed) for a person to look at.
 */
import { mkdirSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { losesCreationAnswer } from "../../src/Providers/Simulator/WalletProviderSim.js"
import { hasBrowser, launchChromium } from "../support/browser.js"
import { decodeQr, finishInvite, labelsOfEveryInput, openPage, shoot, SHOTS, visibleText } from "../support/cabinet-page.js"
import { invite, onboard } from "../support/cabinet.js"
import { field } from "../support/expectations.js"
import { bought, buyBody, loadItem, PURCHASE_ENV, TOKENS, watchPurchase } from "../support/purchases.js"
import { freePort, type RunningServer, startServer } from "../support/server.js"

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

describe.skipIf(!hasBrowser)("the cabinet page in chromium", { timeout: 180_000 }, () => {
  it("goes from the invite to every section: QR codes that decode, purchases in the list, a failed one's reason, a new key once, sign-out and sign-in", async () => {
    let merchant = await server.createMerchant()
    while (losesCreationAnswer(merchant.id, "tron")) merchant = await server.createMerchant()
    // an address from the previous payment provider on one network, none on the other
    const earlierAddress = "TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE"
    await server.adminApi.call((client) => client.merchants.setLegacyAddresses({ path: { id: merchant.id }, payload: { trc20: earlierAddress, bep20: null } }))
    await server.deposit(merchant.id, 102.5)
    const token = await invite(server, merchant.id)
    const { page, problems, requests } = await openPage(browser, server)

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
    await page.getByRole("heading", { name: "Deposit fees" }).waitFor()
    await expect(page.getByText("101.47 USD").count()).resolves.toBeGreaterThan(0)
    await page.getByRole("heading", { name: "Deposit addresses from our previous payment provider" }).waitFor()
    await page.getByText(`USDT on TRON (TRC-20): ${earlierAddress}`).waitFor()
    expect(await visibleText(page)).not.toMatch(/earlier provider|trc20|bep20/i)
    await shoot(page, "2-overview")

    await page.getByRole("link", { name: "Deposit wallets" }).click()
    await page.getByRole("button", { name: "Request an address" }).first().click()
    await page.getByText("Address:").waitFor()
    const address = (await page.locator("article .mono").first().textContent())!.trim()
    expect(address).toMatch(/^T[1-9A-HJ-NP-Za-km-z]{33}$/)
    expect(await decodeQr(page, "article .qr")).toBe(address)
    await expect(page.getByText("Do not send funds").count()).resolves.toBe(0)
    await page.getByText("Your address is ready.").waitFor()
    // the wallet's state in plain words, not the API's status names
    expect(await visibleText(page)).not.toMatch(/bound|prepared|creation.started|requires.reconciliation|reconcile/i)
    await shoot(page, "3-wallets")

    await page.getByRole("link", { name: "Deposits" }).click()
    await page.getByRole("cell", { name: "101.47 USD" }).waitFor()
    await shoot(page, "4-deposits")

    const itemId = await loadItem(server, 1_234)
    await bought(server, merchant, buyBody({ itemId, maxPrice: 12.34, customId: "page-order-1" }))
    // one the buyer declines: it fails, and its price comes back in full
    const declinedItemId = await loadItem(server, 500)
    const declined = await bought(server, merchant, buyBody({ itemId: declinedItemId, maxPrice: 5, customId: "page-order-declined", token: TOKENS.declined }))
    const { final } = await watchPurchase(server, merchant, declined.purchase_id)
    expect(final.failure).toMatchObject({ code: "TRADE_DECLINED", refunded_amount: 5 })
    await page.getByRole("link", { name: "Purchases" }).click()
    await page.getByRole("cell", { name: "page-order-1" }).waitFor()
    const failedRow = page.getByRole("row").filter({ hasText: "page-order-declined" })
    const failureShown = async () => {
      for (const text of ["The buyer declined the trade offer.", "Refunded in full: 5.00 USD is back in your available balance."]) {
        const line = failedRow.getByText(text)
        await expect(line.isVisible(), text).resolves.toBe(true)
        // within the screen's width, not off to the side
        const box = (await line.boundingBox())!
        expect(box.x + box.width, text).toBeLessThanOrEqual(page.viewportSize()!.width)
      }
    }
    await shoot(page, "5-purchases", failureShown)
    await page.getByLabel("Status").selectOption("failed")
    await page.getByRole("button", { name: "Filter" }).click()
    await page.getByRole("cell", { name: "page-order-1" }).waitFor({ state: "detached" })
    await failedRow.getByText("The buyer declined the trade offer.").waitFor()
    await page.getByLabel("Status").selectOption("")
    await page.getByLabel("Custom id").fill("no-such-order")
    await page.getByRole("button", { name: "Filter" }).click()
    await page.getByText("Nothing yet.").waitFor()
    await page.getByLabel("Custom id").fill("page-order-1")
    await page.getByRole("button", { name: "Filter" }).click()
    await page.getByRole("cell", { name: "page-order-1" }).waitFor()

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
    const { page, problems } = await openPage(browser, server)
    await page.goto(`${server.baseUrl}/cabinet/invite#${token}`)
    await finishInvite(page, "lost@page.example", "a third long password")
    await page.getByRole("button", { name: "Finish set-up" }).click()
    await page.getByRole("link", { name: "Deposit wallets" }).click()
    // the second network's button: BEP-20, whose creation answer the simulator loses for this merchant
    await page.getByRole("button", { name: "Request an address" }).nth(1).click()
    await page.getByText("Do not send funds to this wallet now").waitFor()
    await expect(page.getByText("Address:").count()).resolves.toBe(0)
    await expect(page.locator(".qr").count()).resolves.toBe(0)
    // what the wallet's state means, in plain words, with what to do next
    const card = page.getByRole("article").filter({ hasText: "BEP-20" })
    await expect(card.getByRole("button", { name: "Check status" }).count()).resolves.toBe(1)
    expect(await card.innerText()).toMatch(/our wallet provider/)
    expect(await card.innerText()).not.toMatch(/bound|prepared|creation.started|requires.reconciliation|reconcile|request /i)
    // the lost answer's error is told in words for a person, not the API's advice to a program
    const said = (await page.getByRole("status").innerText()).trim()
    expect(said).toMatch(/Do not send funds to it yet/)
    expect(said).not.toMatch(/GET |\/deposits|replacement/)
    await shoot(page, "9-unverified-wallet")
    // the lost answer is the 502 the page shows in its status line, not a page error
    expect(problems.filter((p) => !p.includes("/deposits/wallets") && !p.includes("status of 502"))).toEqual([])
    await page.context().close()
  })

  it("signed out: the sign-in page, and one message for a refused sign-in whichever part was wrong", async () => {
    const { login, password, app } = await onboard(server, `signin-${Date.now()}@page.example`)
    const { page, problems } = await openPage(browser, server)
    await page.goto(`${server.baseUrl}/cabinet`)
    await page.getByRole("heading", { name: "Sign in" }).waitFor()
    await shoot(page, "0-sign-in")

    const refusal = async (attempt: { login: string; password: string; code: string }) => {
      await page.getByLabel("Login (email)").fill(attempt.login)
      await page.getByLabel("Password").fill(attempt.password)
      await page.getByLabel("Code from your authenticator app").fill(attempt.code)
      const [answer] = await Promise.all([page.waitForResponse(`${server.baseUrl}/cabinet/api/login`), page.getByRole("button", { name: "Sign in" }).click()])
      expect(answer.status()).toBe(401)
      const alert = page.getByRole("alert")
      await alert.filter({ hasText: /\S/ }).waitFor()
      // the form empties its alert on submit: the text after the answer is this attempt's
      return (await alert.textContent())!.trim()
    }
    const messages = [
      await refusal({ login: `nobody-${Date.now()}@page.example`, password, code: app.wrong() }),
      await refusal({ login, password: "not the password at all", code: await app.code() }),
      await refusal({ login, password, code: app.wrong() })
    ]
    expect(new Set(messages).size, messages.join(" | ")).toBe(1)
    expect(messages[0]).toMatch(/login, password or code/)
    await shoot(page, "0-sign-in-refused")

    await page.getByLabel("Login (email)").fill(login)
    await page.getByLabel("Password").fill(password)
    await page.getByLabel("Code from your authenticator app").fill(await app.code())
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByText(`Signed in as ${login}`).waitFor()
    // the refusals and the signed-out page's first question (401s) are the only errors
    expect(problems.filter((p) => !/401|status of 401/.test(p))).toEqual([])
    await page.context().close()
  })

  it("a form posted from another origin, with the merchant's cookie, is refused and changes nothing", async () => {
    const merchant = await server.createMerchant()
    const token = await invite(server, merchant.id)
    const { page } = await openPage(browser, server)
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
