// The cabinet's webhooks: the webhook URL, a new signing secret (shown once) and the delivery log.
import { call, query } from "../api.js"
import { field, h } from "../dom.js"
import { copyButton, form, paged, say, section } from "../page.js"
import { deliveryStatus, lastAnswer, when } from "../words.js"

export const webhooks = async ({ session }) => {
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
      [field("Webhook URL (https, empty for none)", { name: "url", type: "url", value: session.me.webhook_url ?? "" })],
      "Save URL",
      async (values) => {
        session.me = await call("/cabinet/api/webhook", { method: "PUT", body: { url: values.url === "" ? null : values.url } })
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
