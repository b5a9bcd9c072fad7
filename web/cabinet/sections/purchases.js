// The cabinet's purchases: filtered by status, custom id and dates, a page at a time; a failed
// purchase with why it failed and whether its price came back.
import { call, query } from "../api.js"
import { field, h, newId } from "../dom.js"
import { form, paged, section } from "../page.js"
import { failureReason, PURCHASE_STATUSES, purchaseStatus, refundText, usd, when } from "../words.js"

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

export const purchases = async () => {
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
