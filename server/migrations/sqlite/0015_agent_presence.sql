-- Which agents are about (`listAgents`): a wait stream that names its agent keeps
-- `waiting_until` a little ahead of now while it is open; agent writes and waits move
-- `last_seen_at` (ms).
CREATE TABLE agent_presence (
    project_id    TEXT NOT NULL REFERENCES projects (project_id),
    name          TEXT NOT NULL,
    waiting_until BIGINT NOT NULL DEFAULT 0,
    last_seen_at  BIGINT NOT NULL,
    PRIMARY KEY (project_id, name)
);
