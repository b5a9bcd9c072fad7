-- Purchases. purchase_requests is the idempotency record (one per merchant and custom_id); a
-- by-name cycle has one request and up to five purchases (attempts) sharing its custom_id.
CREATE TABLE purchase_requests (
  merchant_id      uuid NOT NULL REFERENCES merchants (id),
  custom_id        text NOT NULL,
  kind             text NOT NULL CHECK (kind IN ('by_id', 'by_name')),
  item_id          uuid,
  market_hash_name text,
  target_trade_url text NOT NULL,
  target_steam_id  text NOT NULL,
  -- by-name: running while the cycle picks and tries items; done when it answered
  cycle_state      text NOT NULL DEFAULT 'done' CHECK (cycle_state IN ('running', 'done')),
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (merchant_id, custom_id)
);

CREATE TABLE purchases (
  id                         uuid PRIMARY KEY,
  merchant_id                uuid NOT NULL REFERENCES merchants (id),
  custom_id                  text NOT NULL,
  attempt                    integer NOT NULL DEFAULT 1 CHECK (attempt BETWEEN 1 AND 5),
  item_id                    uuid,
  market_hash_name           text NOT NULL,
  image_url                  text,
  exterior                   text,
  float                      double precision,
  delivery_type              text NOT NULL CHECK (delivery_type IN ('instant', 'manual')),
  estimated_delivery_minutes integer,
  price_cents                bigint NOT NULL CHECK (price_cents > 0),
  provider_price_cents       bigint,
  sim                        text,
  target_trade_url           text NOT NULL,
  target_steam_id            text NOT NULL,
  status                     text NOT NULL DEFAULT 'created'
                             CHECK (status IN ('created', 'processing', 'sent_to_steam', 'completed', 'failed')),
  -- recorded before the provider is called: a resumed worker asks for the same order, never a second
  provider_request_id        uuid UNIQUE,
  acknowledged_at            timestamptz,
  topup_waiting              boolean NOT NULL DEFAULT false,
  trade_offer_id             text,
  trade_offer_url            text,
  failure_code               text,
  failure_message            text,
  refunded_cents             bigint,
  -- the purchase worker's schedule and lease (FOR UPDATE SKIP LOCKED claims)
  next_step_at               timestamptz NOT NULL DEFAULT now(),
  lease_until                timestamptz,
  lease_owner                text,
  -- completed purchases still watched for a reversal until this time
  watch_until                timestamptz,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  updated_at                 timestamptz NOT NULL DEFAULT now(),
  completed_at               timestamptz,
  -- a known trade offer id is never erased
  CHECK (status <> 'failed' OR failure_code IS NOT NULL)
);
CREATE INDEX purchases_by_merchant ON purchases (merchant_id, created_at DESC, id DESC);
CREATE INDEX purchases_by_custom_id ON purchases (merchant_id, custom_id, attempt DESC);
CREATE INDEX purchases_due ON purchases (next_step_at)
  WHERE status IN ('created', 'processing', 'sent_to_steam') OR watch_until IS NOT NULL;

-- The simulated provider's own order book (test mode): what a real provider would keep on its side.
CREATE TABLE sim_provider_orders (
  request_id     uuid PRIMARY KEY,
  purchase_id    uuid NOT NULL,
  outcome        text NOT NULL,
  failure_code   text,
  acknowledged_at timestamptz,
  topup_until    timestamptz,
  offer_at       timestamptz,
  decision_at    timestamptz,
  reversal_at    timestamptz,
  trade_offer_id text,
  created_at     timestamptz NOT NULL DEFAULT now()
);
