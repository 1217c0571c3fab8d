-- The steps the LLM cache holds answers of (for telling a mistyped --step from a step without answers); from the
-- statistics view, which the Parquet mirror carries too, so it answers while a run holds the warehouse.
SELECT DISTINCT step FROM ops.llm_call_stats ORDER BY step;
