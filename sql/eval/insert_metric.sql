INSERT INTO eval.metrics (eval_run_id, metric, value, note) VALUES (?, ?, ?, ?);
