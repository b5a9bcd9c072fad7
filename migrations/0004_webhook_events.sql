-- The outbox: every webhook event, written in the same transaction as the state change it reports.
-- The sender claims due rows (pending, or sending with an expired lease) with FOR UPDATE SKIP LOCKED.
CREATE TABLE webhook_events (
  id                 uuid PRIMARY KEY,
  merchant_id        uuid NOT NULL REFERENCES merchants (id),
  event_type         text NOT NULL,
  order_id           uuid,
  body               text NOT NULL,
  delivery_status    text NOT NULL DEFAULT 'pending' CHECK (delivery_status IN ('pending', 'sending', 'delivered', 'failed')),
  delivery_attempts  integer NOT NULL DEFAULT 0 CHECK (delivery_attempts >= 0),
  last_response_code integer,
  next_attempt_at    timestamptz NOT NULL DEFAULT now(),
  lease_until        timestamptz,
  created_at         timestamptz NOT NULL DEFAULT now(),
  delivered_at       timestamptz
);
CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at) WHERE delivery_status IN ('pending', 'sending');
CREATE INDEX webhook_events_by_merchant ON webhook_events (merchant_id, created_at DESC, id ASC);
CREATE INDEX webhook_events_by_order ON webhook_events (order_id) WHERE order_id IS NOT NULL;
