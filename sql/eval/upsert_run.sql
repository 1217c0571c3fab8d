INSERT OR REPLACE INTO eval.runs (eval_run_id, task, system, dataset, dataset_sha, params, n_items, n_failed,
                                  started_at, finished_at, backend, model)
VALUES ($eval_run_id, $task, $system, $dataset, $dataset_sha, $params, $n_items, $n_failed, $started_at, $finished_at,
        $backend, $model);
