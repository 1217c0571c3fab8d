-- Per-task metrics of the given evaluation runs ($run_ids), by evaluated model, for the leaderboard.
SELECT r.model, m.metric, m.value
FROM eval.runs r
JOIN eval.metrics m USING (eval_run_id)
WHERE list_contains($run_ids, r.eval_run_id) AND contains(m.metric, '/')
ORDER BY r.model, m.metric;
