-- Open a run, with the process that owns it and the run it was started inside (NULL: none); returns its run_id.
INSERT INTO ops.runs (kind, target, started_at, status, pid, host, process_start, parent_run_id)
VALUES (?, ?, ?, 'running', ?, ?, ?, ?) RETURNING run_id;
