-- What the page gave at filing, the capture and the console errors, never changes and
-- is most of an item's bytes (a capture is kilobytes of JSON). It is kept out of
-- `changes`, whose rows every claim and status change rewrites whole on SQLite, so
-- those writes (and their commits) stay small. An item filed with neither has no row.
CREATE TABLE change_captures (
    change_id      TEXT PRIMARY KEY REFERENCES changes (change_id),
    capture        TEXT,
    console_errors TEXT NOT NULL
);
INSERT INTO change_captures (change_id, capture, console_errors)
    SELECT change_id, capture, console_errors FROM changes
    WHERE capture IS NOT NULL OR console_errors <> '[]';
ALTER TABLE changes DROP COLUMN capture;
ALTER TABLE changes DROP COLUMN console_errors;
