SELECT metric, value, note FROM eval.metrics WHERE eval_run_id = $eval_run_id ORDER BY metric;
