-- The row data of the records (each '<table> <key>') quarantined during a run, by the stages that run inside it
-- (each a run of its own): since the run started, the latest of each record last.
SELECT q.table_name, q.source_key, q.row_data
FROM ops.quarantine AS q
WHERE list_contains(?, q.table_name || ' ' || q.source_key)
  AND q.quarantined_at >= (SELECT r.started_at FROM ops.runs AS r WHERE r.run_id = ?)
ORDER BY q.quarantined_at;
