-- The merchant cabinet: invites, one login per merchant (password and TOTP second factor), sessions
-- and failed sign-ins. Tokens and session ids are kept only as SHA-256 hashes, passwords only as a
-- scrypt hash.

-- An operator's invite: single use, 72 h, voided by a newer one. The TOTP secret is chosen at the
-- invite's first start and kept, so every start of one invite shows the same secret.
CREATE TABLE cabinet_invites (
  token_hash  text PRIMARY KEY,
  merchant_id uuid NOT NULL REFERENCES merchants (id),
  totp_secret text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  voided_at   timestamptz
);
CREATE INDEX cabinet_invites_merchant ON cabinet_invites (merchant_id);

-- A merchant's login. totp_last_step is the last time step whose code was accepted: a code is
-- accepted once per merchant, whichever call used it, and a new second factor starts afresh.
CREATE TABLE cabinet_logins (
  merchant_id    uuid PRIMARY KEY REFERENCES merchants (id),
  login          text NOT NULL,
  password_hash  text NOT NULL,
  totp_secret    text NOT NULL,
  totp_last_step bigint,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX cabinet_logins_login ON cabinet_logins (lower(login));

CREATE TABLE cabinet_sessions (
  id_hash      text PRIMARY KEY,
  merchant_id  uuid NOT NULL REFERENCES merchants (id),
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL
);
CREATE INDEX cabinet_sessions_merchant ON cabinet_sessions (merchant_id);

-- Failed sign-ins by login (lower case, whether or not it exists), for the per-login lockout.
CREATE TABLE cabinet_login_failures (
  login     text NOT NULL,
  failed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cabinet_login_failures_login ON cabinet_login_failures (login, failed_at);
