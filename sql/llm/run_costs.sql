-- What run $run and the runs started inside it (a nightly's stages) asked of the LLMs, per run, step, backend,
-- model and the model that served (ops.llm_run_costs, which the Parquet mirror carries).
SELECT c.run_id, r.kind || ' ' || r.target AS run, c.step, c.backend, c.model, c.served_model, c.calls, c.ok,
       c.attempts, c.prompt_tokens, c.completion_tokens, c.model_s
FROM ops.llm_run_costs AS c
JOIN ops.runs AS r USING (run_id)
WHERE c.run_id = $run OR r.parent_run_id = $run
ORDER BY c.run_id, c.step, c.backend, c.model, c.served_model;
