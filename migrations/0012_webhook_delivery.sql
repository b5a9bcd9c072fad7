-- Webhook delivery (src/Webhooks/Sender.ts). A sender claims due rows as 'sending' with a lease:
-- next_attempt_at is then the lease's end, so one index finds both pending rows that are due and
-- sending rows whose sender died. lease_owner is the process holding it (a merchant's events are
-- held by one process at a time); claim_token names the claim: only its holder records the result.
-- run_attempts counts the attempts of the current run of the retry schedule (a replay or a recovery
-- starts a new run); delivery_attempts counts every attempt.
ALTER TABLE webhook_events ADD COLUMN claim_token uuid;
ALTER TABLE webhook_events ADD COLUMN lease_owner text;
ALTER TABLE webhook_events ADD COLUMN run_attempts integer NOT NULL DEFAULT 0 CHECK (run_attempts >= 0);
-- due events in the order they are claimed (oldest due first, then as written)
DROP INDEX webhook_events_due;
CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at, seq) WHERE delivery_status IN ('pending', 'sending');
-- each merchant's events to send, in order (a claim that looks at merchants one by one)
CREATE INDEX webhook_events_merchant_due ON webhook_events (merchant_id, next_attempt_at, seq) WHERE delivery_status IN ('pending', 'sending');
-- bulk recovery: a merchant's failed events since a time
CREATE INDEX webhook_events_failed ON webhook_events (merchant_id, created_at) WHERE delivery_status = 'failed';

-- Secret rotation with overlap: the immediate predecessor and when it stops being used.
ALTER TABLE merchants ADD COLUMN webhook_secret_previous text;
ALTER TABLE merchants ADD COLUMN webhook_secret_previous_until timestamptz;

-- Every statement that writes events wakes the senders of every process at commit (PostgreSQL folds
-- the repeats of one transaction into one notification).
CREATE FUNCTION webhook_events_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('webhook_events_due', 'new');
  RETURN NULL;
END
$$;
CREATE TRIGGER webhook_events_written AFTER INSERT ON webhook_events
  FOR EACH STATEMENT EXECUTE FUNCTION webhook_events_written();
