-- A message states what it is (the protocol's Message `type`), so clients never guess
-- a question from its position. Earlier messages get theirs from the event that
-- recorded them (the event's seq is the message's) or, where that event was pruned,
-- from what they hold: a person only ever answers; an agent message offering `opt-`
-- keys asked; one carrying an option image was a shot; anything else a reply.
ALTER TABLE messages ADD COLUMN message_type TEXT;
UPDATE messages SET message_type = (
    SELECT CASE e.event_type
        WHEN 'asked' THEN 'question'
        WHEN 'answered' THEN 'answer'
        WHEN 'replied' THEN 'reply'
        WHEN 'shot' THEN 'shot'
        WHEN 'done' THEN 'note'
    END
    FROM events e JOIN changes c ON c.project_id = e.project_id
    WHERE c.change_id = messages.change_id AND e.seq = messages.seq
);
UPDATE messages SET message_type = CASE
        WHEN author_kind = 'user' THEN 'answer'
        WHEN attachments LIKE '%"key":"opt-%' THEN 'question'
        WHEN attachments LIKE '%"kind":"option"%' THEN 'shot'
        ELSE 'reply'
    END
WHERE message_type IS NULL;
