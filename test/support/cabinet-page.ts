/**
 * The cabinet's web page as the browser tests look at it: a page that records every request and
 * error, its visible text and sideways overflow, screenshots at a desktop's and a phone's size,
 * QR codes decoded from the screen, and the invite's set-up form filled in.
 */
import jsQRModule from "jsqr"
import type { Browser, Page } from "playwright-core"
import { PNG } from "pngjs"
import { expect } from "vitest"
import { AuthenticatorApp } from "./cabinet.js"
import { ROOT } from "./paths.js"
import type { RunningServer } from "./server.js"

// jsqr is CommonJS: its default export arrives as the module itself or as its `default`
const jsQR = ((jsQRModule as unknown as { default?: unknown }).default ?? jsQRModule) as unknown as typeof jsQRModule.default

/** Where the screenshots go (not committed), for a person to look at. */
export const SHOTS = `${ROOT}/.tmp/screenshots`

/** A page that records every request it makes and every error it meets (console, script, HTTP). */
export const openPage = async (browser: Browser, server: RunningServer) => {
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
export const labelsOfEveryInput = (page: Page) =>
  page.evaluate("[...document.querySelectorAll('input, select')].map((input) => input.labels?.length ?? 0)") as Promise<Array<number>>

const SIZES = [{ width: 1280, height: 800 }, { width: 390, height: 844 }] as const
const PHONE = SIZES[1]

/** Words of a value the page failed to fill in, as they would show (a missing field, a bad number or date). */
const BROKEN_TEXT = /\b(?:null|undefined|NaN|Invalid Date)\b|\[object /

/** The page's visible text (innerText leaves out what is hidden). */
export const visibleText = (page: Page) => page.evaluate("document.body.innerText") as Promise<string>

/**
 * Sideways overflow at the current size: the page's, each table box's (a table that would scroll
 * inside its box), and the innermost elements that reach past the screen's right edge (to name in a failure).
 */
export const overflow = (page: Page) =>
  page.evaluate(`({
    page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    tables: [...document.querySelectorAll(".scroll")].map((box) => box.scrollWidth - box.clientWidth),
    past: [...document.body.querySelectorAll("*")]
      .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth && e.children.length === 0)
      .slice(0, 5)
      .map((e) => e.tagName.toLowerCase() + (e.className ? "." + e.className : "") + " " + (e.textContent ?? "").slice(0, 40))
  })`) as Promise<{ page: number; tables: Array<number>; past: Array<string> }>

/**
 * The page as it is at 1280x800 and at 390x844: no broken value shown at either, and on the phone
 * nothing wider than the screen, tables included (their rows stack); `check` runs at each size;
 * a full-page screenshot of each.
 */
export const shoot = async (page: Page, name: string, check?: () => Promise<void>) => {
  for (const size of SIZES) {
    await page.setViewportSize(size)
    const text = await visibleText(page)
    expect(text.match(BROKEN_TEXT)?.[0], `${name} at ${size.width} px shows a broken value in:\n${text}`).toBeUndefined()
    if (size === PHONE) {
      const wider = await overflow(page)
      expect(wider.page, `${name}: the page is wider than a phone's screen (${wider.past.join("; ")})`).toBeLessThanOrEqual(0)
      expect(wider.tables.filter((by) => by > 0), `${name}: a table scrolls sideways on a phone`).toEqual([])
    }
    await check?.()
    await page.screenshot({ path: `${SHOTS}/cabinet-${name}-${size.width}.png`, fullPage: true })
  }
  await page.setViewportSize(SIZES[0])
}

/** The text a QR code on the page holds, decoded from a screenshot of it. */
export const decodeQr = async (page: Page, selector: string) => {
  const png = PNG.sync.read(await page.locator(selector).screenshot())
  return jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data
}

export const finishInvite = async (page: Page, login: string, password: string) => {
  await page.getByRole("heading", { name: /Set up the cabinet of/ }).waitFor()
  const app = new AuthenticatorApp((await page.locator(".secret").textContent())!.trim())
  await page.getByLabel("Login (email)").fill(login)
  await page.getByLabel(/^Password/).fill(password)
  await page.getByLabel("Code from your authenticator app").fill(await app.code())
  return app
}
