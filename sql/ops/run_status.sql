-- The status and message of one run (no row: the warehouse has none for it).
SELECT status, message FROM ops.runs WHERE run_id = ?;
