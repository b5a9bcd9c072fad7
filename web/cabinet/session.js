// Moving between signed out and signed in on the cabinet page: the sign-in, the onboarding by
// invite, and the signed-in frame (the navigation, each section drawn by its hash, a change run
// then its section drawn again). The sections themselves are in sections/.
import { ApiError, call } from "./api.js"
import { field, h } from "./dom.js"
import { form, nav, qr, say, show } from "./page.js"
import { apiKey } from "./sections/api-key.js"
import { deposits } from "./sections/deposits.js"
import { overview } from "./sections/overview.js"
import { purchases } from "./sections/purchases.js"
import { wallets } from "./sections/wallets.js"
import { webhooks } from "./sections/webhooks.js"

// ---- signed out ---------------------------------------------------------------------------------

export const showSignIn = (message) => {
  nav.hidden = true
  show(
    h("h2", {}, "Sign in"),
    message ? h("p", { class: "warning" }, message) : null,
    form(
      { "aria-label": "Sign in" },
      [
        field("Login (email)", { name: "login", type: "email", autocomplete: "username", required: true }),
        field("Password", { name: "password", type: "password", autocomplete: "current-password", required: true }),
        field("Code from your authenticator app", { name: "code", inputmode: "numeric", autocomplete: "one-time-code", pattern: "[0-9]{6}", required: true })
      ],
      "Sign in",
      async (values) => {
        await call("/cabinet/api/login", { method: "POST", body: values })
        await showCabinet()
      }
    ),
    h("p", { class: "muted" }, "No login yet? Your operator sends you an invite link.")
  )
}

export const showInvite = async (token) => {
  nav.hidden = true
  let started
  try {
    started = await call("/cabinet/api/invite/start", { method: "POST", body: { token } })
  } catch (e) {
    return showSignIn(e.message)
  }
  show(
    h("h2", {}, `Set up the cabinet of ${started.merchant_name}`),
    h("p", {}, "1. Scan this code with an authenticator app (or type the key below)."),
    await qr(started.otpauth_uri, "QR code of the authenticator set-up"),
    h("p", {}, "Key: ", h("span", { class: "secret" }, started.totp_secret)),
    h("p", {}, "2. Choose your login and a password of 12 characters or more, and enter the app's current code."),
    form(
      { "aria-label": "Complete the invite" },
      [
        field("Login (email)", { name: "login", type: "email", autocomplete: "username", required: true }),
        field("Password (12 to 256 characters)", {
          name: "password",
          type: "password",
          autocomplete: "new-password",
          minlength: 12,
          maxlength: 256,
          required: true
        }),
        field("Code from your authenticator app", { name: "code", inputmode: "numeric", autocomplete: "one-time-code", pattern: "[0-9]{6}", required: true })
      ],
      "Finish set-up",
      async (values) => {
        await call("/cabinet/api/invite/complete", { method: "POST", body: { token, ...values } })
        history.replaceState(null, "", "/cabinet")
        await showCabinet()
      }
    )
  )
}

// ---- signed in ----------------------------------------------------------------------------------

const sections = [
  ["overview", "Overview", overview],
  ["wallets", "Deposit wallets", wallets],
  ["deposits", "Deposits", deposits],
  ["purchases", "Purchases", purchases],
  ["webhooks", "Webhooks", webhooks],
  ["key", "API key", apiKey]
]

/** The signed-in merchant as /cabinet/api/me last described it: sections read it, and replace it after a change. */
const session = { me: undefined }

export const showCabinet = async () => {
  try {
    session.me = await call("/cabinet/api/me")
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return showSignIn()
    throw e
  }
  nav.replaceChildren(
    ...sections.map(([id, title]) => h("a", { href: `#${id}` }, title)),
    h("button", {
      type: "button",
      class: "secondary",
      onclick: async () => {
        await call("/cabinet/api/logout", { method: "POST" })
        showSignIn("Signed out.")
      }
    }, "Sign out")
  )
  nav.hidden = false
  await route()
}

/** Navigations so far: a section whose data comes after a later navigation is not drawn over it. */
let navigations = 0

export const route = async () => {
  const navigation = ++navigations
  // the last section's message ("Webhook URL saved.") is not this one's
  say("")
  const id = location.hash.slice(1) || "overview"
  const render = (sections.find(([known]) => known === id) ?? sections[0])[2]
  try {
    const content = await render({ session, act })
    if (navigation === navigations) show(content)
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return showSignIn("Your session ended: sign in again.")
    if (navigation === navigations) show(h("p", { class: "error", role: "alert" }, e.message))
  }
}

/** Runs a change, then shows the section again with what is saved now (a refused change may still have saved something). */
const act = async (change) => {
  let message = "Done."
  try {
    await change()
  } catch (e) {
    message = e.message
  }
  await route()
  say(message)
}
