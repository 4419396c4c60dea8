-- Lists answer summaries (docs/protocol-additions.md, "Lists are summaries"): how many
-- elements and console errors an item's filing captured is kept on the item, so a list
-- never reads `change_captures`, whose captures run to megabytes.
ALTER TABLE changes ADD COLUMN element_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE changes ADD COLUMN console_error_count BIGINT NOT NULL DEFAULT 0;
UPDATE changes SET
    element_count = COALESCE(json_array_length(k.capture, '$.elements'), 0),
    console_error_count = COALESCE(json_array_length(k.console_errors), 0)
FROM change_captures k WHERE k.change_id = changes.change_id;
-- `listChanges`' default filter (all but done and dismissed) in `shortId` order: the
-- items in play are a few among thousands done, which the project's other indexes
-- would walk first (the oldest are mostly done). Written exactly as `listChanges` states
-- it, which SQLite needs to use a partial index.
CREATE INDEX changes_listed ON changes (project_id, short_id)
    WHERE status IN ('open', 'claimed', 'needs_answer', 'in_progress');
-- `countChanges`: what waits for its filer (a question, or a live fix not yet checked)
-- is a few items among thousands done; the condition is written exactly as the query
-- states it, which SQLite needs to use a partial index.
CREATE INDEX changes_waiting ON changes (project_id, short_id)
    WHERE status = 'needs_answer' OR (status = 'done' AND live = 1 AND verified_at IS NULL);
-- `countChanges`'s `held`: the holds still running, a few among one per batch ever filed.
CREATE INDEX holds_by_end ON holds (held_until);
