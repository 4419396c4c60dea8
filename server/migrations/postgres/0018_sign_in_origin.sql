-- Where and when a sign-in code was asked for, shown by `redline auth approve` so the
-- person approving can tell it is theirs; and how many days the token made from it
-- lasts (set at approval).
ALTER TABLE cli_auth ADD COLUMN requested_from TEXT;
ALTER TABLE cli_auth ADD COLUMN token_days INTEGER;
