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

/** A merchant's webhook URL: http(s), at most 2048 characters, or null for none. */
export const WebhookUrl = Schema.NullOr(Schema.String.pipe(
  Schema.maxLength(WEBHOOK_URL_MAX),
  Schema.filter((s) => httpOrigin(s) !== undefined, { message: () => "webhook_url must be an http(s) URL" })
)).annotations({ description: "Where webhooks are delivered (http or https), or null for none." })
