// The cabinet page's calls to the service: /cabinet/api and the merchant API's deposit endpoints,
// with the session cookie (same origin: the browser sends the Origin the service checks). An
// error answer becomes an ApiError with the words of words.js.
import { errorText } from "./words.js"

export const API = "/api/v1/merchant"

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message)
    this.status = status
    this.code = code
  }
}

/** A JSON call; errors in the spec's shape become ApiError. */
export const call = async (path, { method = "GET", body } = {}) => {
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

/** A query string of the parameters that have a value. */
export const query = (params) => new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== "")).toString()
