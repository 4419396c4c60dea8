-- A token may be made to expire, and is revoked by stamping it (`redline token
-- revoke`): the row stays, so `redline token list` can still say whose it was.
ALTER TABLE tokens ADD COLUMN expires_at BIGINT;
ALTER TABLE tokens ADD COLUMN revoked_at BIGINT;
