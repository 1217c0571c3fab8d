-- The row data of a record quarantined during a run (its table and key): the latest since the run started,
-- which the stages that run inside it (each a run of its own) recorded.
SELECT q.row_data
FROM ops.quarantine AS q
WHERE q.table_name = ? AND q.source_key = ?
  AND q.quarantined_at >= (SELECT r.started_at FROM ops.runs AS r WHERE r.run_id = ?)
ORDER BY q.quarantined_at DESC
LIMIT 1;
