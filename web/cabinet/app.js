// The merchant cabinet page: sign-in, onboarding by invite, and the signed-in sections. It talks to
// /cabinet/api and the deposit endpoints with the session cookie (same origin: the browser sends the
// Origin the service checks). Built into dist/cabinet/app.js with the QR code library.
import QRCode from "qrcode"

const API = "/api/v1/merchant"
const main = document.getElementById("main")
const nav = document.getElementById("nav")
const status = document.getElementById("status")

// ---- small helpers ------------------------------------------------------------------------------

/** An element with attributes (on* are listeners) and children (strings become text). */
const h = (tag, attributes = {}, ...children) => {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value)
    else element.setAttribute(name, value === true ? "" : String(value))
  }
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) element.append(child)
  return element
}

let fieldCounter = 0
/** A labelled input. */
const field = (label, attributes) => {
  const id = `f${fieldCounter++}`
  return h("label", { for: id }, label, h("input", { id, ...attributes }))
}

const say = (text) => {
  status.textContent = text
}

class ApiError extends Error {
  constructor(status, code, message) {
    super(message)
    this.status = status
    this.code = code
  }
}

/** A JSON call; errors in the spec's shape become ApiError. */
const call = async (path, { method = "GET", body } = {}) => {
  const response = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await response.text()
  const json = text === "" ? undefined : JSON.parse(text)
  if (!response.ok) throw new ApiError(response.status, json?.error?.code ?? "", json?.error?.message ?? json?.detail ?? response.statusText)
  return json
}

/** A form whose submit runs `action` with its values; errors are shown inside it. */
const form = (attributes, fields, submitLabel, action) => {
  const error = h("p", { class: "error", role: "alert" })
  const element = h("form", attributes, ...fields, h("button", { type: "submit" }, submitLabel), error)
  element.addEventListener("submit", async (event) => {
    event.preventDefault()
    error.textContent = ""
    const values = Object.fromEntries(new FormData(element).entries())
    try {
      await action(values, element)
    } catch (e) {
      if (e instanceof ApiError && e.status === 401 && e.code === "CABINET_SESSION_REQUIRED") return showSignIn("Your session ended: sign in again.")
      error.textContent = e.message
    }
  })
  return element
}

const qr = async (text, label) => {
  const svg = await QRCode.toString(text, { type: "svg", margin: 1, errorCorrectionLevel: "M" })
  const figure = h("div", { class: "qr", role: "img", "aria-label": label })
  // the library's own SVG markup (paths only), built from the text above
  figure.innerHTML = svg
  return figure
}

const copyButton = (text) =>
  h("button", {
    type: "button",
    class: "secondary",
    onclick: async () => {
      await navigator.clipboard.writeText(text)
      say("Copied.")
    }
  }, "Copy")

const usd = (n) => `${Number(n).toFixed(2)} USD`
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "—")

const show = (...children) => {
  main.replaceChildren(...children)
  main.focus()
}

// ---- signed out ---------------------------------------------------------------------------------

const showSignIn = (message) => {
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

const showInvite = async (token) => {
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
  ["overview", "Overview"],
  ["wallets", "Deposit wallets"],
  ["deposits", "Deposits"],
  ["purchases", "Purchases"],
  ["webhooks", "Webhooks"],
  ["key", "API key"]
]

let me

const showCabinet = async () => {
  try {
    me = await call("/cabinet/api/me")
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

const route = async () => {
  const navigation = ++navigations
  // the last section's message ("Webhook URL saved.") is not this one's
  say("")
  const id = location.hash.slice(1) || "overview"
  const render = { overview, wallets, deposits, purchases, webhooks, key }[id] ?? overview
  try {
    const content = await render()
    if (navigation === navigations) show(content)
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return showSignIn("Your session ended: sign in again.")
    if (navigation === navigations) show(h("p", { class: "error", role: "alert" }, e.message))
  }
}

const section = (title, ...children) => h("section", { "aria-labelledby": "section-title" }, h("h2", { id: "section-title" }, title), ...children)

const overview = async () => {
  const [balance, fees] = await Promise.all([call("/cabinet/api/balance"), call(`${API}/deposits/fees`)])
  const card = (label, value) => h("div", { class: "card" }, label, h("strong", {}, value))
  const addresses = Object.entries(balance.deposit_addresses).filter(([, address]) => address !== null)
  return section(
    me.name,
    h("p", { class: "muted" }, `Signed in as ${me.login ?? "—"} · status ${me.status}`),
    h(
      "div",
      { class: "cards" },
      card("Available", usd(balance.available)),
      card("On hold", usd(balance.on_hold)),
      card("Deposited", usd(balance.total_deposited)),
      card("Spent", usd(balance.total_spent))
    ),
    h("p", { class: "muted" }, "On hold is purchases still in flight: already debited, and part of Spent."),
    h("h3", {}, "Deposit fees"),
    h(
      "div",
      { class: "scroll" },
      h(
        "table",
        {},
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Amount (USD)"), h("th", { scope: "col" }, "Fee"))),
        h("tbody", {}, fees.tiers.map((t) => h("tr", {}, h("td", {}, `${t.min_amount} – ${t.max_amount ?? "∞"}`), h("td", {}, `${t.percent} %`))))
      )
    ),
    h("h3", {}, "Earlier provider's addresses"),
    addresses.length === 0
      ? h("p", { class: "muted" }, "None.")
      : h("ul", {}, addresses.map(([network, address]) => h("li", {}, `${network.toUpperCase()}: `, h("span", { class: "mono" }, address))))
  )
}

const NETWORKS = [["tron", "USDT on TRON (TRC-20)"], ["bsc", "USDT on BNB Smart Chain (BEP-20)"]]

const wallets = async () => {
  const list = await call(`${API}/deposits/wallets`)
  const byNetwork = new Map(list.wallets.map((w) => [w.network, w]))
  const items = []
  for (const [network, title] of NETWORKS) {
    const wallet = byNetwork.get(network)
    const parts = [h("h3", {}, title)]
    if (wallet === undefined) {
      parts.push(
        list.can_create
          ? h(
            "button",
            { type: "button", onclick: () => act(() => call(`${API}/deposits/wallets`, { method: "POST", body: { network } })) },
            "Request an address"
          )
          : h("p", { class: "muted" }, list.issuance_enabled ? "New addresses cannot be issued right now." : "Address issuance is off.")
      )
    } else {
      parts.push(h("p", {}, `Request ${wallet.status.replaceAll("_", " ")} · updated ${when(wallet.updated_at)}`))
      if (!wallet.can_deposit) parts.push(h("p", { class: "warning", role: "note" }, "Do not send funds to this wallet now: it cannot take deposits."))
      if (wallet.address !== null) {
        parts.push(
          h("p", {}, "Address: ", h("span", { class: "mono" }, wallet.address), " ", copyButton(wallet.address)),
          await qr(wallet.address, `QR code of the ${title} address`)
        )
      }
      if (wallet.memo !== null) {
        parts.push(
          h(
            "p",
            { class: "warning" },
            "Memo (send it with every deposit, apart from the address; the QR code holds the address only): ",
            h("span", { class: "mono" }, wallet.memo)
          )
        )
      }
      parts.push(
        h("button", {
          type: "button",
          class: "secondary",
          onclick: () => act(() => call(`${API}/deposits/wallets/${wallet.id}/reconcile`, { method: "POST" }))
        }, "Reconcile with the provider")
      )
    }
    items.push(h("article", { class: "card" }, ...parts))
  }
  return section("Deposit wallets", ...items)
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

/** A table of a cursor-paged list, with "More" while there is a next page. */
const paged = (load, headings, row) => {
  const body = h("tbody")
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "More")
  let cursor
  const next = async () => {
    const page = await load(cursor)
    body.append(...page.rows.map(row))
    cursor = page.next_cursor
    more.hidden = cursor === null
    if (body.children.length === 0) body.append(h("tr", {}, h("td", { colspan: headings.length, class: "muted" }, "Nothing yet.")))
  }
  more.addEventListener("click", () => next().catch((e) => say(e.message)))
  return {
    element: h(
      "div",
      {},
      h("div", { class: "scroll" }, h("table", {}, h("thead", {}, h("tr", {}, headings.map((t) => h("th", { scope: "col" }, t)))), body)),
      more
    ),
    next
  }
}

const query = (params) => new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== "")).toString()

const deposits = async () => {
  const list = paged(
    async (cursor) => {
      const page = await call(`${API}/deposits?${query({ cursor, limit: 25 })}`)
      return { rows: page.deposits, next_cursor: page.next_cursor }
    },
    ["Credited", "Amount", "Network", "Transaction"],
    (d) => h("tr", {}, h("td", {}, when(d.created_at)), h("td", {}, usd(d.amount)), h("td", {}, d.network ?? "—"), h("td", { class: "mono" }, d.tx_id ?? "—"))
  )
  await list.next()
  return section("Deposits", list.element)
}

const STATUSES = ["", "created", "processing", "sent_to_steam", "completed", "failed"]

const purchases = async () => {
  const results = h("div")
  const load = async (filters) => {
    const list = paged(
      async (cursor) => {
        const page = await call(`/cabinet/api/purchases?${query({ ...filters, cursor, limit: 25 })}`)
        return { rows: page.purchases, next_cursor: page.next_cursor }
      },
      ["Created", "Item", "Price", "Status", "Custom id"],
      (p) =>
        h(
          "tr",
          {},
          h("td", {}, when(p.created_at)),
          h("td", {}, p.item.market_hash_name),
          h("td", {}, usd(p.price)),
          h("td", {}, p.status),
          h("td", { class: "mono" }, p.custom_id)
        )
    )
    await list.next()
    results.replaceChildren(list.element)
  }
  const id = `f${fieldCounter++}`
  const filters = form(
    { class: "inline", "aria-label": "Filter purchases" },
    [
      h("label", { for: id }, "Status", h("select", { id, name: "status" }, STATUSES.map((s) => h("option", { value: s }, s || "any")))),
      field("Custom id", { name: "custom_id" }),
      field("From", { name: "from", type: "datetime-local" }),
      field("To", { name: "to", type: "datetime-local" })
    ],
    "Filter",
    async (values) => {
      const iso = (local) => (local ? new Date(local).toISOString() : undefined)
      await load({ status: values.status, custom_id: values.custom_id, from: iso(values.from), to: iso(values.to) })
    }
  )
  await load({})
  return section("Purchases", filters, results)
}

const webhooks = async () => {
  const shown = h("div")
  const log = paged(
    async (cursor) => {
      const page = await call(`/cabinet/api/webhook-events?${query({ cursor, limit: 25 })}`)
      return { rows: page.events, next_cursor: page.next_cursor }
    },
    ["Created", "Event", "Delivery", "Attempts", "Last answer"],
    (e) =>
      h(
        "tr",
        {},
        h("td", {}, when(e.created_at)),
        h("td", {}, e.event_type),
        h("td", {}, e.delivery_status),
        h("td", {}, String(e.delivery_attempts)),
        h("td", {}, e.last_response_code ?? "—")
      )
  )
  await log.next()
  return section(
    "Webhooks",
    form(
      { "aria-label": "Webhook URL" },
      [field("Webhook URL (https, empty for none)", { name: "url", type: "url", value: me.webhook_url ?? "" })],
      "Save URL",
      async (values) => {
        me = await call("/cabinet/api/webhook", { method: "PUT", body: { url: values.url === "" ? null : values.url } })
        say("Webhook URL saved.")
      }
    ),
    h("h3", {}, "Signing secret"),
    h("p", { class: "muted" }, "A new secret is shown once. Keep the previous one valid for a while to switch your receiver without a gap."),
    form(
      { "aria-label": "New webhook secret" },
      [
        field("Code from your authenticator app", { name: "code", inputmode: "numeric", autocomplete: "one-time-code", pattern: "[0-9]{6}", required: true }),
        field("Keep the previous secret for (seconds)", { name: "previous_valid_seconds", type: "number", min: 0, max: 604800, value: 0 })
      ],
      "Issue a new secret",
      async (values, element) => {
        const issued = await call("/cabinet/api/webhook-secret", {
          method: "POST",
          body: { code: values.code, previous_valid_seconds: Number(values.previous_valid_seconds || 0) }
        })
        element.reset()
        shown.replaceChildren(
          h("p", {}, "New secret (shown only now): ", h("span", { class: "secret" }, issued.webhook_secret), " ", copyButton(issued.webhook_secret))
        )
      }
    ),
    shown,
    h("h3", {}, "Delivery log"),
    log.element
  )
}

const key = async () => {
  const shown = h("div")
  const currentKey = () => h("p", {}, `Current key: …${me.api_key_last4 ?? "—"}`, h("span", { class: "muted" }, ` (issued ${when(me.api_key_created_at)})`))
  let current = currentKey()
  return section(
    "API key",
    current,
    h("p", { class: "warning" }, "A new key replaces the current one at once: requests with the old key fail from then on."),
    form(
      { "aria-label": "New API key" },
      [
        field("Code from your authenticator app", { name: "code", inputmode: "numeric", autocomplete: "one-time-code", pattern: "[0-9]{6}", required: true })
      ],
      "Issue a new key",
      async (values, element) => {
        const issued = await call("/cabinet/api/api-key", { method: "POST", body: { code: values.code } })
        element.reset()
        me = await call("/cabinet/api/me")
        // the line above names the key now in force
        const next = currentKey()
        current.replaceWith(next)
        current = next
        shown.replaceChildren(
          h("p", {}, "New key (shown only now): ", h("span", { class: "secret", "data-testid": "new-key" }, issued.api_key), " ", copyButton(issued.api_key))
        )
      }
    ),
    shown
  )
}

// ---- start --------------------------------------------------------------------------------------

window.addEventListener("hashchange", () => {
  if (!nav.hidden) route()
})

if (location.pathname === "/cabinet/invite" && location.hash.length > 1) showInvite(location.hash.slice(1))
else showCabinet()
