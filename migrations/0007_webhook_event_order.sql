-- Events of one transaction share a timestamp: a sequence gives the audit log a stable order.
ALTER TABLE webhook_events ADD COLUMN seq bigserial;
CREATE INDEX webhook_events_by_merchant_seq ON webhook_events (merchant_id, seq DESC);
