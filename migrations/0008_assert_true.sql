-- Aborts the statement, and so its transaction, with `message` unless `ok` holds. A statement sent
-- together with its COMMIT (the fast lane's buy) uses it to roll everything back when it did not
-- do its work: the COMMIT of an aborted transaction is a ROLLBACK.
CREATE FUNCTION assert_true(ok boolean, message text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = message;
  END IF;
  RETURN true;
END
$$;
