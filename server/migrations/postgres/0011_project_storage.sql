-- What a project stores, in bytes: its images (`blobs.size_bytes`) and what its filings
-- captured (the capture's and the console errors' JSON text). Writes advance it in the
-- statement that checks it against the per-project quota (`redline serve
-- --project-quota-mb`); deleting an unfiled upload takes its bytes back off.
ALTER TABLE projects ADD COLUMN stored_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE projects SET stored_bytes =
    COALESCE((SELECT SUM(b.size_bytes) FROM blobs b WHERE b.project_id = projects.project_id), 0)
  + COALESCE((SELECT SUM(OCTET_LENGTH(COALESCE(cc.capture, '')) + OCTET_LENGTH(cc.console_errors))
              FROM change_captures cc JOIN changes c ON c.change_id = cc.change_id
              WHERE c.project_id = projects.project_id), 0);
