/**
 * Debian's chromium driven by Playwright, for the page tests. CI installs it (.ci/run); elsewhere
 * the page tests run when it is installed (apt-get install chromium).
 */
import { existsSync } from "node:fs"
import { chromium } from "playwright-core"

const CHROMIUM = "/usr/bin/chromium"

export const hasBrowser = existsSync(CHROMIUM) || process.env["CI"] !== undefined

/** Headless chromium that makes no connections of its own (without these flags it keeps trying to reach outside hosts). */
export const launchChromium = () =>
  chromium.launch({
    executablePath: CHROMIUM,
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
