-- Confirmed deposits. The amount sent is kept in micro-USDT, the credited amount in cents.
CREATE TABLE deposits (
  id                  uuid PRIMARY KEY,
  merchant_id         uuid NOT NULL REFERENCES merchants (id),
  provider            text NOT NULL,
  network             text CHECK (network IN ('tron', 'bsc')),
  destination         text,
  tx_id               text NOT NULL,
  amount_sent_micros  bigint NOT NULL CHECK (amount_sent_micros > 0),
  fee_basis_points    integer NOT NULL CHECK (fee_basis_points >= 0),
  commission_cents    bigint NOT NULL CHECK (commission_cents >= 0),
  amount_cents        bigint NOT NULL CHECK (amount_cents > 0),
  status              text NOT NULL DEFAULT 'paid' CHECK (status = 'paid'),
  created_at          timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tx_id)
);
CREATE INDEX deposits_by_merchant ON deposits (merchant_id, created_at DESC, id ASC);
