-- A filer's batch on a stage is held in one place: a filing extends its `holds` row
-- (or starts a new one once the last has ended), and an item's `heldUntil` is its
-- hold's. Before, a filing rewrote `held_until` on every item its filer still held on
-- the stage: the n-th filing of a batch rewrote n rows. A hold's row stays once it has
-- ended, so the items it held keep showing when that was.
CREATE TABLE holds (
    hold_id       TEXT PRIMARY KEY,
    stage_id      TEXT NOT NULL REFERENCES stages (stage_id),
    filer_user_id TEXT REFERENCES users (user_id),
    held_until    BIGINT NOT NULL
);
CREATE INDEX holds_by_filer ON holds (stage_id, filer_user_id, held_until);
-- Checked at commit: a filing stores its item, naming the hold, before the hold (a
-- batch's hold is named after its first item).
ALTER TABLE changes ADD COLUMN hold_id TEXT REFERENCES holds (hold_id) DEFERRABLE INITIALLY DEFERRED;
-- The items one filing last set are one hold: those still held share their filer's
-- latest `held_until`, so each filer's live batch becomes one hold.
INSERT INTO holds (hold_id, stage_id, filer_user_id, held_until)
    SELECT MIN(change_id), stage_id, filer_user_id, held_until FROM changes WHERE held_until IS NOT NULL
    GROUP BY stage_id, filer_user_id, held_until;
UPDATE changes SET hold_id = (
    SELECT h.hold_id FROM holds h
    WHERE h.stage_id = changes.stage_id AND h.filer_user_id IS changes.filer_user_id
      AND h.held_until = changes.held_until)
WHERE held_until IS NOT NULL;
DROP INDEX changes_by_filer_hold;
ALTER TABLE changes DROP COLUMN held_until;
-- A release reads its hold's items; withdrawn and dismissed items are in none.
CREATE INDEX changes_by_hold ON changes (hold_id) WHERE hold_id IS NOT NULL;
