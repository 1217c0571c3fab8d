-- The judge's overall score of every judged draft of the given evaluation runs ($run_ids).
SELECT r.model, o.gold ->> 'task' AS task, CAST(o.scores ->> 'judge_overall' AS DOUBLE) AS score
FROM eval.item_outputs o
JOIN eval.runs r USING (eval_run_id)
WHERE list_contains($run_ids, o.eval_run_id) AND (o.scores ->> 'judge_overall') IS NOT NULL
ORDER BY task, r.model;
