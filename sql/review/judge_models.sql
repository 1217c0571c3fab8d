-- The models that answered a judge's step, as configured (ops.llm_calls.model), with their answers.
SELECT model, CAST(NULL AS VARCHAR) AS served_model, count(*) AS answers
FROM ops.llm_calls WHERE step = $step AND status = 'ok' GROUP BY ALL ORDER BY answers DESC, model;
