-- What the filer's panel last found of an item's circled elements on a build other
-- than the one it was filed on (`recordRefind`): one row per item, replaced by the next
-- finding; `elements` is the JSON list of `RefoundElement`s.
CREATE TABLE refinds (
    change_id  TEXT PRIMARY KEY REFERENCES changes (change_id),
    git_sha    TEXT NOT NULL,
    elements   TEXT NOT NULL,
    found_by   TEXT,
    found_at   BIGINT NOT NULL
);
