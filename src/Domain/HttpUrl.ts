/** http(s) URLs: where webhooks go, and the origins the cabinet allows. */
import { Schema } from "effect"

/** The origin (`scheme://host[:port]`) of an http(s) URL, as a browser sends it in `Origin`; undefined for anything else. */
export const httpOrigin = (url: string): string | undefined => {
  try {
    const parsed = new URL(url)
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.origin : undefined
  } catch {
    return undefined
  }
}

export const WEBHOOK_URL_MAX = 2048

/** Whether a URL carries user info (`user:pass@`), which would travel in every delivery and show in every log of it. */
export const hasUserInfo = (url: string): boolean => {
  try {
    const parsed = new URL(url)
    return parsed.username !== "" || parsed.password !== ""
  } catch {
    return false
  }
}

/** A merchant's webhook URL: http(s), without user info, at most 2048 characters, or null for none. */
export const WebhookUrl = Schema.NullOr(Schema.String.pipe(
  Schema.maxLength(WEBHOOK_URL_MAX),
  Schema.filter((s) => httpOrigin(s) !== undefined, { message: () => "webhook_url must be an http(s) URL" }),
  Schema.filter((s) => !hasUserInfo(s), { message: () => "webhook_url must not carry user info (user:password@)" })
)).annotations({ description: "Where webhooks are delivered (http or https, without user info), or null for none." })
