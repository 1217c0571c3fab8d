-- Open a run; returns its run_id.
INSERT INTO ops.runs (kind, target, started_at, status) VALUES (?, ?, ?, 'running') RETURNING run_id;
