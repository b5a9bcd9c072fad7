// Building the cabinet page's elements: an element with attributes and children, labelled fields,
// and data tables that narrow screens show as stacked cards (app.css) while they stay tables to
// assistive technology.

/** Children worth adding: null, undefined and false are left out, so they never show as text. */
export const present = (children) => children.flat().filter((child) => child !== null && child !== undefined && child !== false)

/** An element with attributes (on* are listeners) and children (strings become text). */
export const h = (tag, attributes = {}, ...children) => {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value)
    else element.setAttribute(name, value === true ? "" : String(value))
  }
  element.append(...present(children))
  return element
}

let idCounter = 0
/** A new id for a label's control. */
export const newId = () => `f${idCounter++}`

/** A labelled input. */
export const field = (label, attributes) => {
  const id = newId()
  return h("label", { for: id }, label, h("input", { id, ...attributes }))
}

/**
 * A row of a data table; each cell carries its column's heading, shown beside it when rows are
 * stacked. The explicit roles keep the table's semantics where a browser drops them for cells
 * shown as blocks.
 */
export const tableRow = (headings, cells) => h("tr", { role: "row" }, cells.map((content, i) => h("td", { role: "cell", "data-label": headings[i] }, content)))

/** A row of one cell across the table ("Nothing yet."). */
export const tableNote = (headings, text) => h("tr", { role: "row" }, h("td", { role: "cell", colspan: headings.length, class: "muted" }, text))

/**
 * A data table in a container that scrolls sideways, with shadows at an edge that has more, and
 * that takes keyboard focus so the arrow keys scroll it. `stack`: narrow screens show each row as a
 * card of heading and value pairs instead (app.css).
 */
export const dataTable = (label, headings, body, { stack = true } = {}) =>
  h(
    "div",
    { class: "scroll", role: "region", "aria-label": label, tabindex: 0 },
    h(
      "table",
      { role: "table", class: stack ? "stack" : undefined },
      h("thead", { role: "rowgroup" }, h("tr", { role: "row" }, headings.map((t) => h("th", { scope: "col", role: "columnheader" }, t)))),
      body
    )
  )

export const tableBody = (...rows) => h("tbody", { role: "rowgroup" }, ...rows)
