INSERT OR REPLACE INTO eval.casegen_metrics
VALUES ($item_id, $model, $task, $metric, $value, $status, $reason, $run_id);
