-- Items reserved by purchases whose removal the change log does not record yet. A buy inserts its
-- item here in its own transaction instead of appending to the log, so buys do not queue on the
-- log's head row (catalogue_state) or on NOTIFY's commit lock: only a merchant's own balance row
-- orders its buys. Each process moves what its buys reserved into the log in batches, and every
-- process picks up what a process that died left here (Catalogue/Reservations.ts).
CREATE TABLE catalogue_reservations (
  item_id     uuid PRIMARY KEY,
  reserved_at timestamptz NOT NULL DEFAULT now()
);
