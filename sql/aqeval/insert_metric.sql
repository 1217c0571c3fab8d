INSERT INTO eval.aquaechr_metrics (run_id, metric, value, note) VALUES ($run_id, $metric, $value, $note);
