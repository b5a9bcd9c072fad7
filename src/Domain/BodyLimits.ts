/** The largest request bodies the listeners read (RequestBody.ts guards them; the OpenAPI document's 413 names the API's). */

/** The merchant API's bodies are under 1 KiB (a /buy body); nothing a merchant sends comes near this. */
export const API_BODY_MAX_BYTES = 1024 * 1024
/**
 * The admin API takes whole catalogue files (`cli catalogue load`: 100,000 items are about 70 MB),
 * but a body must stay far below V8's longest string (about 512 MiB) and what a process can hold.
 */
export const ADMIN_BODY_MAX_BYTES = 256 * 1024 * 1024
