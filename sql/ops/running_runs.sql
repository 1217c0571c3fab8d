-- Runs still marked running, with the process that owns them (runs from before migration 112 have none).
SELECT run_id, pid, host, process_start FROM ops.runs WHERE status = 'running' AND pid IS NOT NULL ORDER BY run_id;
