-- Machine score next to the human score of the same generation: the judge's overall score and each metric.
SELECT 'llm_judge' AS scorer, j.task, j.score AS machine, h.score AS human
FROM _human h
JOIN eval.casegen_judgements j USING (item_id, model)
WHERE j.judge_model = $judge_model AND j.dimension = 'overall' AND j.score IS NOT NULL
UNION ALL
SELECT m.metric, m.task, m.value, h.score
FROM _human h
JOIN eval.casegen_metrics m USING (item_id, model)
WHERE m.value IS NOT NULL AND m.metric IN ('rougeL_char_f1', 'rougeL_word_f1', 'rougeL_compat_f1', 'bertscore_f1')
ORDER BY 1, 2;
