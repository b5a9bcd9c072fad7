-- The claim's first step reads the events held by a process (delivery_status 'sending', a few
-- hundred at most): through webhook_events_due it read every event scheduled for later as well,
-- and a backlog of retries (up to 27.5 hours of them per event) is far larger.
CREATE INDEX webhook_events_sending ON webhook_events (merchant_id) WHERE delivery_status = 'sending';
