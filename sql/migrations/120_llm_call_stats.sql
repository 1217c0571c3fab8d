-- What `caseforge llm stats` shows: one row per step, backend and model of the LLM cache. A view, so the Parquet
-- mirror carries these few rows (the cache itself, every request and answer, is too large to mirror) and the
-- command answers from the mirror while a run holds the warehouse. Hits are not stored, only answered calls.
-- ok: a usable answer; failed: an answer that could not be used; unanswered: no endpoint answered (asked again by
-- the next run).
-- Sums are BIGINT: DuckDB sums integers as HUGEINT, which Parquet stores as DOUBLE (the mirror said 14.0 tokens).
CREATE OR REPLACE VIEW ops.llm_call_stats AS
SELECT step,
       backend,
       model,
       count(*)                                   AS calls,
       count(*) FILTER (WHERE status = 'ok')      AS ok,
       count(*) FILTER (WHERE status = 'failed')  AS failed,
       count(*) FILTER (WHERE status = 'unanswered') AS unanswered,
       sum(attempts)::BIGINT                      AS attempts,
       coalesce(sum(prompt_tokens), 0)::BIGINT    AS prompt_tokens,
       coalesce(sum(completion_tokens), 0)::BIGINT AS completion_tokens,
       avg(latency_ms)                            AS mean_latency_ms,
       max(created_at)                            AS last_call_at
FROM ops.llm_calls
GROUP BY step, backend, model;
