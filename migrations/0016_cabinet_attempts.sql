-- The cabinet's lockouts: a sign-in (by login) or a step-up code of the key and secret endpoints
-- (by merchant) takes its place in a window before its password or code is checked. One row per
-- login or merchant keeps the times of its attempts that still count: one INSERT ... ON CONFLICT
-- DO UPDATE adds a time only while fewer than the limit are within the window, and the row lock
-- it takes makes attempts sent at once, to one process or several, count one after the other. A
-- success takes its own time out again; a failure leaves it. Rows idle for a window are swept.
CREATE TABLE cabinet_attempts (
  scope      text NOT NULL CHECK (scope IN ('sign-in', 'step-up')),
  -- sign-in: the login in lower case, whether or not it exists; step-up: the merchant's id
  subject    text NOT NULL,
  attempts   timestamptz[] NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope, subject)
);
CREATE INDEX cabinet_attempts_updated ON cabinet_attempts (updated_at);

-- The failures were counted after the password check, so attempts sent at once all passed.
DROP TABLE cabinet_login_failures;
