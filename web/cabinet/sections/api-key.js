// The cabinet's API key: the key in force (its last characters) and a new one issued, shown once.
import { call } from "../api.js"
import { field, h } from "../dom.js"
import { copyButton, form, section } from "../page.js"
import { when } from "../words.js"

export const apiKey = async ({ session }) => {
  const shown = h("div")
  const currentKey = () =>
    h("p", {}, `Current key: …${session.me.api_key_last4 ?? "—"}`, h("span", { class: "muted" }, ` (issued ${when(session.me.api_key_created_at)})`))
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
        session.me = await call("/cabinet/api/me")
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
