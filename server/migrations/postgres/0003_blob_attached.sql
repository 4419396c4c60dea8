-- An image is `attached` once an item or a message refers to it; screenshots that
-- were uploaded (uploadShot) but never filed are deleted after a day. Images stored
-- before this migration count as attached.
ALTER TABLE blobs ADD COLUMN attached BIGINT NOT NULL DEFAULT 0;
UPDATE blobs SET attached = 1;
