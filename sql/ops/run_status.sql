-- The status of one run (no row: the warehouse has none for it).
SELECT status FROM ops.runs WHERE run_id = ?;
