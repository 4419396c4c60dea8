-- What each agent's wait has shown it of an item's thread (`acknowledgeChangeMessages`):
-- an answer or a verdict wakes the item's agent until it has been shown, whatever the
-- agent wrote since (docs/protocol-additions.md, "Answers reach the agent").
CREATE TABLE shown_messages (
    change_id  TEXT NOT NULL,
    claimed_by TEXT NOT NULL,
    message_id TEXT NOT NULL,
    shown_at   BIGINT NOT NULL,
    PRIMARY KEY (change_id, claimed_by, message_id)
);

-- Before this table, a wait woke its agent for an answer only while the person had
-- spoken last: an answer the agent has written after was taken as seen, and still is.
INSERT INTO shown_messages (change_id, claimed_by, message_id, shown_at)
SELECT m.change_id, g.claimed_by, m.message_id, m.created_at
FROM messages m
JOIN changes c ON c.change_id = m.change_id
JOIN claim_groups g ON g.group_id = c.group_id
WHERE m.author_kind = 'user'
  AND EXISTS (
      SELECT 1 FROM messages later
      WHERE later.change_id = m.change_id AND later.seq > m.seq AND later.author_kind = 'agent'
  );
