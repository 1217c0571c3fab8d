-- Open a run, with the process that owns it; returns its run_id.
INSERT INTO ops.runs (kind, target, started_at, status, pid, host, process_start)
VALUES (?, ?, ?, 'running', ?, ?, ?) RETURNING run_id;
