-- A by-name cycle outlives its process: its parameters and budget are kept with its idempotency
-- record, and the process running it holds a lease that it renews. Another process resumes a
-- running cycle whose lease ran out (its process died) within what is left of its budget.
ALTER TABLE purchase_requests
  ADD COLUMN max_price         text,        -- by-name: max_price as compared (the number's text)
  ADD COLUMN estimated_time    integer,     -- by-name: minutes, or null
  ADD COLUMN cycle_deadline    timestamptz, -- by-name: the end of the shared budget
  ADD COLUMN cycle_owner       text,        -- by-name: the process running the cycle
  ADD COLUMN cycle_lease_until timestamptz; -- by-name: until when that process holds it

CREATE INDEX purchase_requests_running ON purchase_requests (cycle_lease_until) WHERE cycle_state = 'running';
