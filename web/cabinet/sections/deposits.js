// The cabinet's deposits: the credited deposits, newest first, a page at a time.
import { API, call, query } from "../api.js"
import { h } from "../dom.js"
import { paged, section } from "../page.js"
import { networkName, usd, when } from "../words.js"

export const deposits = async () => {
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
