-- The steps the LLM cache holds answers of (for telling a mistyped --step from a step without answers).
SELECT DISTINCT step FROM ops.llm_calls ORDER BY step;
