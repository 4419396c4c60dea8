-- A person checks a done item's fix on the live stage (`verifyChange`): `fixed` records
-- when and who; `still_wrong` reopens the item, leaving it in no group, so the name it
-- was completed as (`completeChange`'s `authorName`, else its group's claimant) is kept
-- on the item for the agent the verdict is for.
ALTER TABLE changes ADD COLUMN verified_at BIGINT;
ALTER TABLE changes ADD COLUMN verified_by TEXT;
ALTER TABLE changes ADD COLUMN completed_by TEXT;
UPDATE changes SET completed_by = (
    SELECT g.claimed_by FROM claim_groups g WHERE g.group_id = changes.group_id
)
WHERE status = 'done';
