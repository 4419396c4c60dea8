-- A project's outgoing webhooks (`redline webhook add`). `events` is the event types
-- sent, comma-separated with a comma at each end (",asked,done,"); `secret` signs each
-- request (it has to be read back to sign, so it cannot be stored hashed). One process at
-- a time sends a webhook's deliveries, in order: the one whose `sender_until` (ms) is
-- ahead of now.
CREATE TABLE webhooks (
    webhook_id   TEXT PRIMARY KEY,
    project_id   TEXT NOT NULL REFERENCES projects (project_id),
    url          TEXT NOT NULL,
    events       TEXT NOT NULL,
    format       TEXT NOT NULL,
    secret       TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    sender       TEXT,
    sender_until BIGINT NOT NULL DEFAULT 0,
    -- The latest attempt (`listWebhooks`, `webhook list`): `last_error` is NULL when the
    -- receiver answered 2xx.
    last_attempt_at BIGINT,
    last_status     INTEGER,
    last_error      TEXT
);
CREATE INDEX webhooks_project ON webhooks (project_id);

-- One event to send to one webhook, written by the trigger below in the same
-- transaction as the event: `pending` until the receiver answers 2xx (`delivered`) or a
-- day of retries has passed (`failed`). `body` is fixed at the first attempt, so every
-- retry sends the same bytes under the same id.
CREATE TABLE webhook_deliveries (
    webhook_id      TEXT NOT NULL REFERENCES webhooks (webhook_id),
    seq             BIGINT NOT NULL,
    event_type      TEXT NOT NULL,
    change_id       TEXT NOT NULL,
    short_id        TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    state           TEXT NOT NULL DEFAULT 'pending',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    body            TEXT,
    last_error      TEXT,
    PRIMARY KEY (webhook_id, seq)
);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (state, webhook_id, seq);

CREATE TRIGGER events_to_webhooks AFTER INSERT ON events
BEGIN
    INSERT INTO webhook_deliveries (webhook_id, seq, event_type, change_id, short_id, created_at, next_attempt_at)
    SELECT w.webhook_id, NEW.seq, NEW.event_type, NEW.change_id, NEW.short_id, NEW.created_at, NEW.created_at
    FROM webhooks w
    WHERE w.project_id = NEW.project_id AND instr(w.events, ',' || NEW.event_type || ',') > 0;
END;
