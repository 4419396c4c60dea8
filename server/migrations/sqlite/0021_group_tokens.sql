-- A token limited to one claimed group's items (`createGroupToken`): it works only
-- while that group's lease is live. Its scopes are empty: what it may call is decided
-- by its group (`server/src/ops/group_token.rs`), never by scopes.
ALTER TABLE tokens ADD COLUMN group_id TEXT;
