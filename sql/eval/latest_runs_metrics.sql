-- The latest run of each configuration of one task ($task), one row per metric, for a report table.
-- A configuration is the system, backend, model and dataset with the run's parameters minus the limit.
WITH latest AS (
    SELECT * FROM eval.runs
    WHERE task = $task
    QUALIFY row_number() OVER (PARTITION BY system, backend, model, dataset, json_extract(params, '$.nli')
                               ORDER BY started_at DESC, eval_run_id) = 1
)
SELECT l.eval_run_id, l.system, l.backend, l.model, l.params, l.dataset, l.n_items, l.n_failed,
       m.metric, m.value, m.note
FROM latest l JOIN eval.metrics m USING (eval_run_id)
ORDER BY l.dataset, l.system, l.model, m.metric;
