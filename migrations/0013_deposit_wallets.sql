-- Deposit wallets (spec 2.3, 3.2, 4.1): one durable request per merchant and network, written before
-- the wallet provider is called. The provider's idempotency key is derived from the request's id, so
-- no retry, crash or concurrent request can create a second provider wallet. An address is kept only
-- with a validated binding; provider_status is what the provider last said (active or disabled).
CREATE TABLE deposit_wallets (
  id                 uuid PRIMARY KEY,
  merchant_id        uuid NOT NULL REFERENCES merchants (id),
  network            text NOT NULL CHECK (network IN ('tron', 'bsc')),
  status             text NOT NULL DEFAULT 'prepared'
                     CHECK (status IN ('prepared', 'creation_started', 'requires_reconciliation', 'bound')),
  provider_wallet_id text,
  address            text,
  memo               text,
  provider_status    text CHECK (provider_status IN ('active', 'disabled')),
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  UNIQUE (merchant_id, network),
  CHECK ((status = 'bound') = (address IS NOT NULL AND provider_wallet_id IS NOT NULL AND provider_status IS NOT NULL))
);
CREATE UNIQUE INDEX deposit_wallets_provider_wallet ON deposit_wallets (provider_wallet_id) WHERE provider_wallet_id IS NOT NULL;

-- Every verified payment callback of the wallet provider, once per transfer id: credited (with its
-- deposit), or why not.
CREATE TABLE wallet_payments (
  transfer_id        text PRIMARY KEY,
  provider_wallet_id text NOT NULL,
  wallet_id          uuid REFERENCES deposit_wallets (id),
  network            text NOT NULL,
  address            text NOT NULL,
  amount             text NOT NULL,
  tx_hash            text,
  outcome            text NOT NULL CHECK (outcome IN ('credited', 'unknown_wallet', 'wallet_disabled', 'wallet_not_bound', 'invalid_amount')),
  deposit_id         uuid REFERENCES deposits (id),
  received_at        timestamptz NOT NULL DEFAULT now()
);

-- Test mode: the simulated wallet provider's own records, what a real provider keeps on its side
-- (so they outlive a restart of the service), and its callback signing secret.
CREATE TABLE sim_wallet_provider_wallets (
  idempotency_key    text PRIMARY KEY,
  provider_wallet_id text NOT NULL UNIQUE,
  merchant_id        uuid NOT NULL,
  network            text NOT NULL,
  address            text NOT NULL,
  memo               text,
  status             text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  binds_at           timestamptz NOT NULL,
  response_lost      boolean NOT NULL DEFAULT false,
  created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE sim_wallet_provider_secret (
  only_one boolean PRIMARY KEY DEFAULT true CHECK (only_one),
  secret   text NOT NULL
);
