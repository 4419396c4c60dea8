-- Items are looked up by group only for a group that exists, so items in none (most)
-- need no entry: a claim then adds index entries without first removing as many.
DROP INDEX changes_by_group;
CREATE INDEX changes_by_group ON changes (group_id) WHERE group_id IS NOT NULL;
