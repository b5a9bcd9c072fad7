/**
 * Whether a failure is the database being out of reach: a connection refused, reset, timed out or
 * ended by the server (a restart, a failover, `pg_terminate_backend`). Such a failure is the fault's
 * expected consequence, reported as a warning and retried (a supervised fiber restarts), unlike a
 * failure of the code or of a statement, which is an error.
 */
import { Cause, Effect, Predicate } from "effect"

/**
 * SQLSTATEs of a lost connection: class 08 (connection exception), the server shutting down
 * (57P01 admin, 57P02 crash) or not yet accepting connections (57P03).
 */
const LOST_STATE = /^(08[0-9A-Z]{3}|57P0[123])$/
/** Node's codes of a socket that could not connect or broke. */
const SOCKET_CODES: ReadonlySet<unknown> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN"
])
/** node-postgres's and pg-pool's own words for a lost connection, which come without a code. */
const LOST_MESSAGE = /^Connection terminated|is not queryable$|^timeout exceeded when trying to connect|Connection timed out$/

const lostHere = (error: unknown): boolean => {
  if (Predicate.hasProperty(error, "code") && (SOCKET_CODES.has(error.code) || (typeof error.code === "string" && LOST_STATE.test(error.code)))) {
    return true
  }
  return error instanceof Error && LOST_MESSAGE.test(error.message)
}

/**
 * The error, or an error it was caused by (`cause`, an AggregateError's `errors`: a refused
 * connection to each address of a host), is a lost or refused database connection.
 */
export const isConnectionLoss = (error: unknown, depth = 0): boolean => {
  if (depth > 8 || !Predicate.isObject(error)) return false
  if (lostHere(error)) return true
  if (Predicate.hasProperty(error, "errors") && Array.isArray(error.errors) && error.errors.some((e) => isConnectionLoss(e, depth + 1))) {
    return true
  }
  return Predicate.hasProperty(error, "cause") && isConnectionLoss(error.cause, depth + 1)
}

/** Every failure and defect of `cause` (there is at least one) is a lost database connection. */
export const isConnectionLossCause = (cause: Cause.Cause<unknown>): boolean => {
  const faults = [...Cause.failures(cause), ...Cause.defects(cause)]
  return faults.length > 0 && faults.every((fault) => isConnectionLoss(fault))
}

/**
 * Logs a failure (an error, or a Cause): as a warning that says the database is out of reach when
 * that is all it is, the outage's expected consequence; as an error otherwise.
 */
export const logFault = (message: string, failure: unknown): Effect.Effect<void> =>
  (Cause.isCause(failure) ? isConnectionLossCause(failure) : isConnectionLoss(failure))
    ? Effect.logWarning(`${message}: the database is out of reach`, failure)
    : Effect.logError(message, failure)
