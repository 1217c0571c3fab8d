-- One line per step and model: what the LLM cache holds (ops.llm_call_stats, which the Parquet mirror carries).
SELECT *
FROM ops.llm_call_stats
WHERE ($step IS NULL OR step = $step)
ORDER BY step, backend, model;
