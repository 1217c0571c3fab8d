DELETE FROM eval.metrics WHERE eval_run_id = ?;
