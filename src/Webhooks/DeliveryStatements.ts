/**
 * The statements the sender runs hundreds of times a second under a backlog (Deliveries.ts runs
 * them): the claim of due events and the record of attempts' results, as texts with numbered
 * parameters, so that on PostgreSQL each is a prepared statement sent with its transaction in one
 * round trip.
 */

/**
 * Claims and results are bookkeeping of at-least-once delivery: one lost in a crash of the
 * database only means an event is sent again. Their commits do not wait for the disk.
 */
export const NO_SYNC_COMMIT = "set_config('synchronous_commit', 'off', true)"

/**
 * The claim reads the due events in the order of their index and stops at its limit. A growing
 * backlog outruns the table's statistics (autovacuum analyzes it a minute or more later, if at
 * all), and with them the planner took a bitmap scan of every due event and a sort instead: 15 ms
 * a claim at 20,000 due events, against under 4 ms in the index's order, and the claims ran a few
 * hundred times a second under POST /buy. Set for the claim's transaction only.
 */
export const CLAIM_PLAN = "set_config('enable_bitmapscan', 'off', true)"

/** The most due events one claim looks at (twice that many are scanned). */
export const CLAIM_WINDOW_MAX = 128

/**
 * The claim (see `claim` in Deliveries.ts): planned once per connection (planning it cost more
 * than running it). $1/$2 the events held per merchant, $3 the owner, $4 the limit
 * per merchant, $5 the scan, $6 the window, $7 the free places, $8 the lease, $9 the claim token.
 */
const claimStatement = (byMerchant: boolean) => `
  WITH RECURSIVE ${
  byMerchant
    ? `
  -- every merchant with events to send, one index probe each (a loose index scan)
  merchants_with_events AS (
    (SELECT merchant_id FROM webhook_events WHERE delivery_status IN ('pending', 'sending') ORDER BY merchant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT e.merchant_id FROM webhook_events e
            WHERE e.delivery_status IN ('pending', 'sending') AND e.merchant_id > h.merchant_id
            ORDER BY e.merchant_id LIMIT 1)
    FROM merchants_with_events h WHERE h.merchant_id IS NOT NULL),`
    : ""
}
  -- held events whose lease runs (lease_until: a held event's next_attempt_at, and not a key of
  -- webhook_events_due, which would read every event scheduled for later too)
  live AS (
    SELECT merchant_id, lease_owner FROM webhook_events
    WHERE delivery_status = 'sending' AND lease_until > now()),
  held AS (
    SELECT merchant_id, n FROM unnest($1::uuid[], $2::int[]) AS h(merchant_id, n)),
  closed AS (
    SELECT merchant_id FROM live WHERE lease_owner IS DISTINCT FROM $3::text
    UNION SELECT merchant_id FROM held WHERE n >= $4::int),
  ${
  byMerchant
    ? `
  candidates AS (
    SELECT r.id, r.merchant_id, r.next_attempt_at, r.seq
    FROM merchants_with_events h CROSS JOIN LATERAL (
      SELECT id, merchant_id, next_attempt_at, seq FROM webhook_events
      WHERE merchant_id = h.merchant_id AND delivery_status IN ('pending', 'sending') AND next_attempt_at <= now()
      ORDER BY next_attempt_at, seq LIMIT $4::int) AS r
    WHERE h.merchant_id IS NOT NULL AND h.merchant_id NOT IN (SELECT merchant_id FROM closed)
    ORDER BY r.next_attempt_at, r.seq LIMIT $6::int),
  scanned AS (SELECT 1 WHERE $5::int < 0),`
    : `
  scanned AS (
    SELECT id, merchant_id, next_attempt_at, seq FROM webhook_events
    WHERE delivery_status IN ('pending', 'sending') AND next_attempt_at <= now()
    ORDER BY next_attempt_at, seq LIMIT $5::int),
  candidates AS (
    SELECT * FROM scanned WHERE merchant_id NOT IN (SELECT merchant_id FROM closed)
    ORDER BY next_attempt_at, seq LIMIT $6::int),`
}
  ranked AS (
    SELECT c.id, c.next_attempt_at, c.seq,
      row_number() OVER (PARTITION BY c.merchant_id ORDER BY c.next_attempt_at, c.seq) + coalesce(h.n, 0) AS slot
    FROM candidates c LEFT JOIN held h ON h.merchant_id = c.merchant_id),
  chosen AS (
    SELECT id FROM ranked WHERE slot <= $4::int
    ORDER BY next_attempt_at, seq LIMIT $7::int),
  claimed AS (
    UPDATE webhook_events e
    SET delivery_status = 'sending', claim_token = $9::uuid, lease_owner = $3::text,
        lease_until = now() + make_interval(secs => $8::int),
        next_attempt_at = now() + make_interval(secs => $8::int)
    FROM chosen, merchants m
    -- still due once its row lock is had (a replay or a record may have changed it meanwhile)
    WHERE e.id = chosen.id AND m.id = e.merchant_id
      AND e.delivery_status IN ('pending', 'sending') AND e.next_attempt_at <= now()
    RETURNING e.id, e.merchant_id AS "merchantId", e.event_type AS "eventType", e.body,
      e.created_at AS "createdAt", e.run_attempts AS "runAttempts", m.webhook_url AS "webhookUrl",
      m.webhook_secret AS secret,
      CASE WHEN m.webhook_secret_previous_until > now() THEN m.webhook_secret_previous END AS "previousSecret")
  SELECT claimed.*,
    (SELECT count(*) FROM ranked WHERE slot <= $4::int) > (SELECT count(*) FROM chosen) AS "leftOut",
    (SELECT count(*) FROM candidates) >= $6::int AS "windowFull",
    (SELECT count(*) FROM scanned) >= $5::int AS "deep",
    (SELECT min(next_attempt_at) FROM webhook_events
     WHERE delivery_status IN ('pending', 'sending') AND next_attempt_at > now()
       AND merchant_id NOT IN (SELECT merchant_id FROM closed)) AS "nextDue"
  FROM (SELECT 1) AS one LEFT JOIN claimed ON true`
export const CLAIM = claimStatement(false)
export const CLAIM_BY_MERCHANT = claimStatement(true)

/** An attempt's result per row of the arrays: $1 id, $2 claim token, $3 status, $4 delivered, $5 at, $6 next attempt. */
export const RECORD = `
  UPDATE webhook_events e SET
    delivery_attempts = e.delivery_attempts + 1,
    run_attempts = e.run_attempts + 1,
    last_response_code = r.status,
    delivery_status = CASE WHEN r.delivered THEN 'delivered' WHEN r.next_at IS NULL THEN 'failed' ELSE 'pending' END,
    delivered_at = CASE WHEN r.delivered THEN r.at ELSE e.delivered_at END,
    next_attempt_at = coalesce(r.next_at, r.at),
    lease_until = NULL, claim_token = NULL, lease_owner = NULL
  FROM (SELECT ${NO_SYNC_COMMIT}) AS bookkeeping,
       unnest($1::uuid[], $2::uuid[], $3::int[], $4::bool[], $5::timestamptz[], $6::timestamptz[])
    AS r(id, token, status, delivered, at, next_at)
  WHERE e.id = r.id AND e.claim_token = r.token AND e.delivery_status = 'sending'`
