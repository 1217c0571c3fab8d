-- What one run's LLM calls cost (ops.llm_run_costs summed): calls, tokens, whole milliseconds of model time.
SELECT coalesce(sum(calls), 0)::BIGINT, coalesce(sum(prompt_tokens), 0)::BIGINT,
       coalesce(sum(completion_tokens), 0)::BIGINT, round(coalesce(sum(model_s), 0) * 1000)::BIGINT
FROM ops.llm_run_costs
WHERE run_id = ?;
