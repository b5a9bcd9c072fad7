-- The catalogue: the items table (the live index's source of truth) and the append-only change log
-- whose gapless sequence is the feed cursor. catalogue_state's single row is locked by every
-- writer of the log (UPDATE ... head_seq + 1), so sequences commit strictly in order: a reader
-- that has seen seq N has seen every seq below N.
CREATE TABLE catalogue_state (
  id             boolean PRIMARY KEY DEFAULT true CHECK (id),
  epoch          integer NOT NULL,
  head_seq       bigint NOT NULL DEFAULT 0,
  -- every change with seq <= pruned_through has been deleted by retention
  pruned_through bigint NOT NULL DEFAULT 0,
  -- set by the sync leader once the items reflect the supplier's snapshot
  reconciled_at  timestamptz
);
INSERT INTO catalogue_state (epoch) VALUES (floor(random() * 2147483646)::integer + 1);

CREATE TABLE catalogue_items (
  id                   uuid PRIMARY KEY,
  market_hash_name     text NOT NULL,
  price_cents          bigint NOT NULL CHECK (price_cents > 0),
  provider_price_cents bigint,
  -- active: listed; reserved: taken by a purchase; removed: delisted by the supplier
  status               text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'reserved', 'removed')),
  item                 text NOT NULL,
  sim                  text,
  -- supplier: from the supplier feed (reconciled against its snapshot); admin: loaded by an operator
  source               text NOT NULL DEFAULT 'supplier' CHECK (source IN ('supplier', 'admin')),
  updated_seq          bigint NOT NULL DEFAULT 0,
  updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX catalogue_items_active ON catalogue_items (market_hash_name, price_cents) WHERE status = 'active';

CREATE TABLE catalogue_changes (
  seq        bigint PRIMARY KEY,
  epoch      integer NOT NULL,
  op         text NOT NULL CHECK (op IN ('upsert', 'remove')),
  item_id    uuid NOT NULL,
  item       text,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((op = 'upsert') = (item IS NOT NULL))
);
CREATE INDEX catalogue_changes_created ON catalogue_changes (created_at);
