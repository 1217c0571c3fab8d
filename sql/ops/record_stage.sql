INSERT OR REPLACE INTO ops.nightly_stages (run_id, stage, name, status, counts, duration_s, message, finished_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);
