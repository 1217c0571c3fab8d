-- The models that answered a judge's step: as configured, and as the server said it served them
-- (ops.llm_calls.served_model, NULL for answers recorded before the server was asked), with their answers.
SELECT model, served_model, count(*) AS answers
FROM ops.llm_calls WHERE step = $step AND status = 'ok' GROUP BY ALL ORDER BY answers DESC, model, served_model;
