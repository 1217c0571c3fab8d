INSERT INTO eval.item_outputs (eval_run_id, item_id, gold, predicted, scores, status, reason) VALUES (?, ?, ?, ?, ?, ?, ?);
