-- Mean score per model, task and dimension (LLM judge) and per metric, with how many values went in.
SELECT model, task, 'judge:' || judge_model AS scorer, dimension AS measure,
       avg(score) AS mean, count(score) AS n, count(*) - count(score) AS n_null
FROM eval.casegen_judgements
WHERE list_contains($models, model)
GROUP BY ALL
UNION ALL
SELECT model, task, 'metric' AS scorer, metric AS measure, avg(value) AS mean, count(value) AS n,
       count(*) - count(value) AS n_null
FROM eval.casegen_metrics
WHERE list_contains($models, model)
GROUP BY ALL
ORDER BY model, task, scorer, measure;
