// The cabinet's deposit wallets: a wallet per network with its address, QR code and memo, or the
// button that requests one; the wallet's status checked on request.
import { API, call } from "../api.js"
import { h } from "../dom.js"
import { copyButton, qr, section } from "../page.js"
import { NETWORKS, walletStatus, when } from "../words.js"

export const wallets = async ({ act }) => {
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
