/**
 * The operator's bearer token for /admin/*: ADMIN_TOKEN when set; otherwise generated on first
 * start, saved to DATA_DIR/admin-token (mode 0600) and printed once.
 */
import { Effect, Option, Redacted } from "effect"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Settings } from "../Config.js"
import { bearerToken, constantTimeEquals, generateAdminToken } from "../Merchants/Keys.js"

export class AdminToken extends Effect.Service<AdminToken>()("AdminToken", {
  effect: Effect.gen(function*() {
    const settings = yield* Settings
    let generated = false
    const token = Option.isSome(settings.adminToken)
      ? Redacted.value(settings.adminToken.value)
      : yield* Effect.sync(() => {
        const file = join(settings.dataDir, "admin-token")
        if (existsSync(file)) return readFileSync(file, "utf8").trim()
        mkdirSync(settings.dataDir, { recursive: true })
        const fresh = generateAdminToken()
        writeFileSync(file, fresh + "\n", { mode: 0o600 })
        generated = true
        return fresh
      })

    /** Whether an Authorization header carries the admin token. */
    const verify = (authorization: string | undefined) => {
      const presented = bearerToken(authorization)
      return presented !== "" && constantTimeEquals(presented, token)
    }

    return { verify, generatedNow: generated ? Option.some(token) : Option.none<string>() } as const
  })
}) {}
