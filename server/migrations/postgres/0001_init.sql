-- The whole store of the changes server, Postgres dialect; kept statement for statement
-- in step with migrations/sqlite/0001_init.sql. Instants are milliseconds since the Unix
-- epoch (BIGINT), flags are 0/1 BIGINTs and structured values are JSON text, so the
-- queue runs the same statements on both engines through sqlx's Any driver.

-- Server-wide values, e.g. the secret that signs blob URLs.
CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- A project owns stages, items, tokens and the per-project counters: short ids, claim
-- fences and the change-event sequence. Every queue write updates its project row
-- first, which serialises writes per project on both engines.
CREATE TABLE projects (
    project_id     TEXT PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE,
    grace_seconds  BIGINT NOT NULL,
    next_short_id  BIGINT NOT NULL DEFAULT 1,
    last_fence     BIGINT NOT NULL DEFAULT 0,
    last_event_seq BIGINT NOT NULL DEFAULT 0,
    created_at     BIGINT NOT NULL
);

-- A person; "the same filer" means the same user.
CREATE TABLE users (
    user_id    TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

-- Bearer tokens, stored only as SHA-256 hex of the secret. A token belongs to one
-- project; scopes are space-separated wire names.
CREATE TABLE tokens (
    token_id   TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL REFERENCES projects (project_id),
    user_id    TEXT NOT NULL REFERENCES users (user_id),
    scopes     TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE stages (
    stage_id        TEXT PRIMARY KEY,
    project_id      TEXT NOT NULL REFERENCES projects (project_id),
    branch          TEXT NOT NULL,
    stage_type      TEXT NOT NULL,
    url             TEXT,
    git_sha         TEXT,
    deployment_id   TEXT,
    changes_enabled BIGINT NOT NULL DEFAULT 1,
    created_at      BIGINT NOT NULL,
    UNIQUE (project_id, branch)
);

-- Claims. `fence` comes from projects.last_fence and grows with every claim.
CREATE TABLE claim_groups (
    group_id         TEXT PRIMARY KEY,
    project_id       TEXT NOT NULL REFERENCES projects (project_id),
    title            TEXT NOT NULL,
    claimed_by       TEXT,
    claim_expires_at BIGINT,
    fence            BIGINT NOT NULL,
    created_at       BIGINT NOT NULL
);

CREATE TABLE changes (
    change_id      TEXT PRIMARY KEY,
    project_id     TEXT NOT NULL REFERENCES projects (project_id),
    short_id       BIGINT NOT NULL,
    stage_id       TEXT NOT NULL REFERENCES stages (stage_id),
    group_id       TEXT REFERENCES claim_groups (group_id),
    title          TEXT NOT NULL,
    body           TEXT,
    status         TEXT NOT NULL,
    route          TEXT,
    git_sha        TEXT,
    deployment_id  TEXT,
    locale         TEXT,
    viewport       TEXT,
    capture        TEXT,
    screenshot_key TEXT,
    console_errors TEXT NOT NULL,
    source         TEXT NOT NULL,
    filed_by       TEXT,
    filer_user_id  TEXT REFERENCES users (user_id),
    branch         TEXT,
    head_commit    TEXT,
    resolved_at    BIGINT,
    live           BIGINT,
    created_at     BIGINT NOT NULL,
    held_until     BIGINT,
    -- SHA-256 of the createChange input, to tell a retry from a reused changeId.
    payload_hash   TEXT NOT NULL,
    UNIQUE (project_id, short_id)
);
CREATE INDEX changes_by_project_status ON changes (project_id, status, short_id);
CREATE INDEX changes_by_filer_hold ON changes (stage_id, filer_user_id, held_until);
CREATE INDEX changes_by_group ON changes (group_id);

-- The thread. `seq` is the project event sequence of the write that added the
-- message, which orders a thread even within one millisecond.
CREATE TABLE messages (
    message_id    TEXT PRIMARY KEY,
    change_id     TEXT NOT NULL REFERENCES changes (change_id),
    seq           BIGINT NOT NULL,
    author_kind   TEXT NOT NULL,
    author_name   TEXT,
    body          TEXT NOT NULL,
    attachments   TEXT NOT NULL,
    chosen_option TEXT,
    created_at    BIGINT NOT NULL
);
CREATE INDEX messages_by_change ON messages (change_id, seq);

-- Change events, kept for Last-Event-ID replay; old ones are pruned.
CREATE TABLE events (
    project_id TEXT NOT NULL REFERENCES projects (project_id),
    seq        BIGINT NOT NULL,
    event_type TEXT NOT NULL,
    change_id  TEXT NOT NULL,
    short_id   TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (project_id, seq)
);

-- Uploaded images; the bytes live in DIR/blobs/<blob_key>.
CREATE TABLE blobs (
    blob_key     TEXT PRIMARY KEY,
    project_id   TEXT NOT NULL REFERENCES projects (project_id),
    content_type TEXT NOT NULL,
    size_bytes   BIGINT NOT NULL,
    created_at   BIGINT NOT NULL
);
