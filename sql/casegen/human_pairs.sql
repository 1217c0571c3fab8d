-- Machine score next to the human score of the same draft (item, evaluated model) in the given evaluation
-- runs ($run_ids): the judge's overall score and each similarity metric, from eval.item_outputs.
WITH machine AS (
    SELECT o.item_id, r.model, o.gold ->> 'task' AS task, s.scorer,
           CAST(o.scores ->> s.field AS DOUBLE) AS machine
    FROM eval.item_outputs o
    JOIN eval.runs r USING (eval_run_id)
    CROSS JOIN (VALUES ('llm_judge', 'judge_overall'), ('rougeL_char_f1', 'rougeL_char_f1'),
                       ('rougeL_word_f1', 'rougeL_word_f1'), ('rougeL_compat_f1', 'rougeL_compat_f1'),
                       ('bertscore_f1', 'bertscore_f1')) AS s(scorer, field)
    WHERE list_contains($run_ids, o.eval_run_id)
)
SELECT m.scorer, m.task, m.machine, h.score AS human
FROM _human h
JOIN machine m USING (item_id, model)
WHERE m.machine IS NOT NULL
ORDER BY m.scorer, m.task, m.item_id, m.model;
