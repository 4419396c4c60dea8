-- Sign-in codes (requestCliAuth / pollCliAuth). A person's code is approved by an
-- admin (`redline auth approve`), naming the project, scopes and person; the token is
-- made when the client next polls, so no token secret is ever stored.
CREATE TABLE cli_auth (
    code       TEXT PRIMARY KEY,
    -- pending | approved | delivered | rejected
    status     TEXT NOT NULL,
    project_id TEXT REFERENCES projects (project_id),
    scopes     TEXT,
    user_name  TEXT,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
