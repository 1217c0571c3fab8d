-- A running run whose process is gone: interrupted, with why (never a run that finished meanwhile).
UPDATE ops.runs SET status = 'interrupted', message = ? WHERE run_id = ? AND status = 'running';
