-- Option keys were `opt-` and the first 8 hex digits of a time-ordered id, so the
-- options of one question could share a key and an answer could not say which was
-- chosen. The re-keying of those threads is a step in Rust (`db::DATA_STEPS`, run right
-- after this file on both engines: the keys sit inside the JSON text of `attachments`);
-- this table records that it ran, so it runs once.
CREATE TABLE data_steps (
    name       TEXT PRIMARY KEY,
    applied_at BIGINT NOT NULL
);
