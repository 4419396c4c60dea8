-- Images kept in the database (`redline serve --blob-store database`, the default on
-- Postgres): each image's bytes in rows of 256 KiB, read one row at a time. The row of
-- `seq` 0 says the image exists (an empty image has just that row); `created_at` (ms)
-- is when the bytes were stored, for `redline blobs gc`. `blobs` still records which
-- images exist and whose they are; a store only holds bytes.
CREATE TABLE blob_chunks (
    blob_key   TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    bytes      BLOB NOT NULL,
    PRIMARY KEY (blob_key, seq)
);
