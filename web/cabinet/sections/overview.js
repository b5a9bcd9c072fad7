// The cabinet's overview: the balance, the deposit fees and the addresses of the previous payment provider.
import { API, call } from "../api.js"
import { dataTable, h, tableBody, tableRow } from "../dom.js"
import { section } from "../page.js"
import { accountStatus, NETWORKS, usd } from "../words.js"

export const overview = async ({ session }) => {
  const { me } = session
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
