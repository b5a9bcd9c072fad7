// The cabinet page's frame and its pieces: the main area, the navigation and the status line;
// sections, forms whose errors show inside them, QR codes, copy buttons and cursor-paged tables.
import QRCode from "qrcode"
import { ApiError } from "./api.js"
import { dataTable, h, present, tableBody, tableNote, tableRow } from "./dom.js"

export const main = document.getElementById("main")
export const nav = document.getElementById("nav")
const status = document.getElementById("status")

export const say = (text) => {
  status.textContent = text
}

export const show = (...children) => {
  // replaceChildren would write a null child as the text "null"
  main.replaceChildren(...present(children))
  main.focus()
}

export const section = (title, ...children) => h("section", { "aria-labelledby": "section-title" }, h("h2", { id: "section-title" }, title), ...children)

/** What a form does when its call finds the session ended (the page sets it: back to the sign-in). */
let onSessionEnded = () => undefined
export const whenSessionEnds = (handler) => {
  onSessionEnded = handler
}

/** A form whose submit runs `action` with its values; errors are shown inside it. */
export const form = (attributes, fields, submitLabel, action) => {
  const error = h("p", { class: "error", role: "alert" })
  const element = h("form", attributes, ...fields, h("button", { type: "submit" }, submitLabel), error)
  element.addEventListener("submit", async (event) => {
    event.preventDefault()
    error.textContent = ""
    const values = Object.fromEntries(new FormData(element).entries())
    try {
      await action(values, element)
    } catch (e) {
      if (e instanceof ApiError && e.status === 401 && e.code === "CABINET_SESSION_REQUIRED") return onSessionEnded()
      error.textContent = e.message
    }
  })
  return element
}

export const qr = async (text, label) => {
  const svg = await QRCode.toString(text, { type: "svg", margin: 1, errorCorrectionLevel: "M" })
  const figure = h("div", { class: "qr", role: "img", "aria-label": label })
  // the library's own SVG markup (paths only), built from the text above
  figure.innerHTML = svg
  return figure
}

export const copyButton = (text) =>
  h("button", {
    type: "button",
    class: "secondary",
    onclick: async () => {
      await navigator.clipboard.writeText(text)
      say("Copied.")
    }
  }, "Copy")

/** A table of a cursor-paged list, with "More" while there is a next page; `cells` gives a row's cells in the headings' order. */
export const paged = (label, load, headings, cells) => {
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
