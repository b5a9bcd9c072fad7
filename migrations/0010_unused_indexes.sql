-- Indexes no query uses, dropped: every write paid for them (two webhook events and an item's
-- reservation per buy, every supplier price change).
-- The audit log (GET /webhook-events) reads by (merchant_id, seq) since 0007.
DROP INDEX IF EXISTS webhook_events_by_merchant;
-- The catalogue is searched in memory; the engine loads the items in id order (primary key).
DROP INDEX IF EXISTS catalogue_items_active;
