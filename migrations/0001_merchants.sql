-- Merchants, their API keys (only a SHA-256 hash and the last 4 characters are kept) and webhook settings.
CREATE TABLE merchants (
  id             uuid PRIMARY KEY,
  name           text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 100),
  status         text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'blocked', 'inactive')),
  webhook_url    text,
  webhook_secret text NOT NULL,
  legacy_trc20   text,
  legacy_bep20   text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id          uuid PRIMARY KEY,
  merchant_id uuid NOT NULL REFERENCES merchants (id),
  key_hash    text NOT NULL UNIQUE,
  last4       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
-- At most one live key per merchant: rotation revokes the old one in the same transaction.
CREATE UNIQUE INDEX api_keys_one_live_per_merchant ON api_keys (merchant_id) WHERE revoked_at IS NULL;
