-- `getStats` counts the items of a window only up to a bound, read on this index, so
-- asking for ten years of a large project costs a bounded range, not the project.
CREATE INDEX changes_by_created ON changes (project_id, created_at);
-- A webhook's backlog is capped: the oldest pending deliveries past the cap are deleted
-- and counted here (`redline webhook list`).
ALTER TABLE webhooks ADD COLUMN dropped BIGINT NOT NULL DEFAULT 0;
-- The person whose token last named the agent in a write (or first marked it waiting):
-- only their tokens' wait streams mark it waiting. NULL for rows from before.
ALTER TABLE agent_presence ADD COLUMN user_id TEXT;
