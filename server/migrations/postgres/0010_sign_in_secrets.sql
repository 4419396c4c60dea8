-- A sign-in code's device secret (SHA-256, hex): `pollCliAuth` must present the secret
-- `requestCliAuth` answered, so the short code a person reads aloud only approves.
-- Codes from before this migration have none and can no longer be collected.
-- `expires_at` now also ends an approval: `redline auth approve` sets it minutes ahead.
ALTER TABLE cli_auth ADD COLUMN secret_hash TEXT;
