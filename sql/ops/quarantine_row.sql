-- One row (or item) that was kept out of curated, with the stage and reason.
INSERT INTO ops.quarantine (run_id, table_name, source_key, stage, reason, row_data, raw_sha256, quarantined_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);
