SELECT model, task, judge_model, score
FROM eval.casegen_judgements
WHERE dimension = 'overall' AND score IS NOT NULL AND list_contains($models, model)
ORDER BY task, model;
