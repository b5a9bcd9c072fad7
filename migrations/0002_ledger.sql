-- The balance row and the append-only ledger. Every change of a balance is one ledger row written
-- in the same transaction; the CHECKs make the invariants of spec 2.2 and CONTRACT 6 hold in the database.
CREATE TABLE balances (
  merchant_id           uuid PRIMARY KEY REFERENCES merchants (id),
  available_cents       bigint NOT NULL DEFAULT 0 CHECK (available_cents >= 0),
  on_hold_cents         bigint NOT NULL DEFAULT 0 CHECK (on_hold_cents >= 0),
  total_deposited_cents bigint NOT NULL DEFAULT 0 CHECK (total_deposited_cents >= 0),
  total_spent_cents     bigint NOT NULL DEFAULT 0 CHECK (total_spent_cents >= 0),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  CHECK (available_cents + total_spent_cents = total_deposited_cents),
  CHECK (on_hold_cents <= total_spent_cents)
);

CREATE TABLE ledger_entries (
  id                    bigserial PRIMARY KEY,
  merchant_id           uuid NOT NULL REFERENCES merchants (id),
  kind                  text NOT NULL CHECK (kind IN ('deposit_credit', 'purchase_debit', 'purchase_refund')),
  amount_cents          bigint NOT NULL CHECK (amount_cents <> 0),
  available_after_cents bigint NOT NULL CHECK (available_after_cents >= 0),
  reference_id          uuid NOT NULL,
  created_at            timestamptz NOT NULL DEFAULT now(),
  -- exactly once: one credit per deposit, one debit and at most one refund per purchase
  UNIQUE (kind, reference_id)
);
CREATE INDEX ledger_entries_by_merchant ON ledger_entries (merchant_id, id);
