DELETE FROM eval.item_outputs WHERE eval_run_id = ?;
