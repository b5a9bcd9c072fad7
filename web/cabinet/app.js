// The merchant cabinet page: sign-in, onboarding by invite, and the signed-in sections. It talks to
// /cabinet/api and the deposit endpoints with the session cookie (same origin: the browser sends the
// Origin the service checks). Built into dist/cabinet/app.js with the QR code library.
import QRCode from "qrcode"
import { dataTable, field, h, newId, present, tableBody, tableNote, tableRow } from "./dom.js"
import {
  accountStatus,
  deliveryStatus,
  errorText,
  failureReason,
  lastAnswer,
  networkName,
  NETWORKS,
  PURCHASE_STATUSES,
  purchaseStatus,
  refundText,
  usd,
  walletStatus,
  when
} from "./words.js"

const API = "/api/v1/merchant"
const main = document.getElementById("main")
const nav = document.getElementById("nav")
const status = document.getElementById("status")

// ---- small helpers ------------------------------------------------------------------------------

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
  if (!response.ok) {
    const code = json?.error?.code ?? ""
    throw new ApiError(response.status, code, errorText(code, json?.error?.message ?? json?.detail ?? response.statusText))
  }
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

const show = (...children) => {
  // replaceChildren would write a null child as the text "null"
  main.replaceChildren(...present(children))
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
  const earlier = NETWORKS.map((n) => [n, balance.deposit_addresses?.[n.earlier]]).filter(([, address]) => typeof address === "string" && address !== "")
  const tierHeadings = ["Amount sent", "Fee"]
  const tierAmount = (t) =>
    t.max_amount === null
      ? `${usd(t.min_amount)} and more`
      : t.min_amount === 0
      ? `Under ${usd(t.max_amount)}`
      : `${usd(t.min_amount)} to under ${usd(t.max_amount)}`
  return section(
    me.name,
    h("p", { class: "muted" }, `Signed in as ${me.login ?? "—"} · ${accountStatus(me.status)}`),
    h(
      "div",
      { class: "cards" },
      card("Available", usd(balance.available)),
      card("On hold", usd(balance.on_hold)),
      card("Deposited", usd(balance.total_deposited)),
      card("Spent", usd(balance.total_spent))
    ),
    h(
      "p",
      { class: "muted" },
      "On hold is the price of purchases not finished yet: already taken from Available and counted in Spent. A failed purchase's refund returns to Available."
    ),
    h("h3", {}, "Deposit fees"),
    h("p", { class: "muted" }, "Taken from each deposit: your balance is credited with the amount sent less this fee."),
    dataTable("Deposit fees", tierHeadings, tableBody(fees.tiers.map((t) => tableRow(tierHeadings, [tierAmount(t), `${t.percent} %`]))), { stack: false }),
    h("h3", {}, "Deposit addresses from our previous payment provider"),
    earlier.length === 0
      ? h("p", { class: "muted" }, "None: you have no addresses from our previous payment provider. Use your deposit wallets.")
      : [
        h(
          "p",
          { class: "muted" },
          "Addresses you may have been given before we moved to deposit wallets. Payments to them are credited once our team has confirmed them; for new deposits, use your deposit wallets."
        ),
        h("ul", {}, earlier.map(([n, address]) => h("li", {}, `${n.title}: `, h("span", { class: "mono" }, address))))
      ]
  )
}

const wallets = async () => {
  const list = await call(`${API}/deposits/wallets`)
  const byNetwork = new Map(list.wallets.map((w) => [w.network, w]))
  const items = []
  for (const { network, title } of NETWORKS) {
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
          : h(
            "p",
            { class: "muted" },
            list.issuance_enabled
              ? "We cannot create a new address right now: try again later."
              : "Deposit addresses are not offered at the moment: ask your operator how to top up."
          )
      )
    } else {
      parts.push(h("p", {}, walletStatus(wallet.status), h("span", { class: "muted" }, ` (updated ${when(wallet.updated_at)})`)))
      if (!wallet.can_deposit) parts.push(h("p", { class: "warning", role: "note" }, "Do not send funds to this wallet now: it cannot take deposits."))
      if (wallet.address !== null) {
        if (wallet.can_deposit) parts.push(h("p", {}, `Send only ${title} to this address.`))
        parts.push(
          h("p", {}, "Address: ", h("span", { class: "mono" }, wallet.address), " ", copyButton(wallet.address)),
          await qr(wallet.address, `QR code of the ${title} address`)
        )
      }
      if (wallet.memo !== null && wallet.memo !== "") {
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
        }, "Check status")
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

/** A table of a cursor-paged list, with "More" while there is a next page; `cells` gives a row's cells in the headings' order. */
const paged = (label, load, headings, cells) => {
  const body = tableBody()
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "More")
  let cursor
  const next = async () => {
    const page = await load(cursor)
    body.append(...page.rows.map((row) => tableRow(headings, cells(row))))
    cursor = page.next_cursor
    more.hidden = cursor === null
    if (body.children.length === 0) body.append(tableNote(headings, "Nothing yet."))
  }
  more.addEventListener("click", () => next().catch((e) => say(e.message)))
  return { element: h("div", {}, dataTable(label, headings, body), more), next }
}

const query = (params) => new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== "")).toString()

const deposits = async () => {
  const list = paged(
    "Deposits",
    async (cursor) => {
      const page = await call(`${API}/deposits?${query({ cursor, limit: 25 })}`)
      return { rows: page.deposits, next_cursor: page.next_cursor }
    },
    ["Credited", "Amount", "Network", "Transaction"],
    (d) => [when(d.created_at), h("span", { class: "amount" }, usd(d.amount)), networkName(d.network), h("span", { class: "mono" }, d.tx_id ?? "—")]
  )
  await list.next()
  return section("Deposits", h("p", { class: "muted" }, "Amounts are what your balance was credited with, after the deposit fee."), list.element)
}

/** A purchase's status, and for a failed one why, and whether its price came back. */
const purchaseOutcome = (p) =>
  p.failure === null || p.failure === undefined
    ? purchaseStatus(p.status)
    : h(
      "div",
      { class: "outcome" },
      h("strong", {}, purchaseStatus(p.status)),
      h("span", { class: "reason" }, failureReason(p.failure)),
      h("span", {}, refundText(p.failure, p.price)),
      h("span", { class: "muted" }, "Reason code: ", h("span", { class: "mono" }, p.failure.code))
    )

const purchases = async () => {
  const results = h("div")
  const load = async (filters) => {
    const list = paged(
      "Purchases",
      async (cursor) => {
        const page = await call(`/cabinet/api/purchases?${query({ ...filters, cursor, limit: 25 })}`)
        return { rows: page.purchases, next_cursor: page.next_cursor }
      },
      ["Created", "Item", "Price", "Status", "Custom id"],
      (
        p
      ) => [
        when(p.created_at),
        p.item.market_hash_name,
        h("span", { class: "amount" }, usd(p.price)),
        purchaseOutcome(p),
        h("span", { class: "mono" }, p.custom_id)
      ]
    )
    await list.next()
    results.replaceChildren(list.element)
  }
  const id = newId()
  const filters = form(
    { class: "inline", "aria-label": "Filter purchases" },
    [
      h(
        "label",
        { for: id },
        "Status",
        h("select", { id, name: "status" }, h("option", { value: "" }, "Any"), PURCHASE_STATUSES.map(([value, label]) => h("option", { value }, label)))
      ),
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
    "Delivery log",
    async (cursor) => {
      const page = await call(`/cabinet/api/webhook-events?${query({ cursor, limit: 25 })}`)
      return { rows: page.events, next_cursor: page.next_cursor }
    },
    ["Created", "Event", "Delivery", "Attempts", "Last answer"],
    (e) => [when(e.created_at), h("span", { class: "mono" }, e.event_type), deliveryStatus(e), String(e.delivery_attempts), lastAnswer(e.last_response_code)]
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
