-- Which model served each answer, and which run asked for it (issue 41: provenance; issue 43: what a night cost).
-- served_model: the name the endpoint answered under (openai: each response's `model`, checked against the
-- endpoint's /v1/models before the job), the model file llamacpp loaded, the model vllm loaded; NULL for an answer
-- cached before this column existed (shown as "not recorded", never guessed). run_id: the ops.runs row of the run
-- that asked (NULL outside a run: a test, a shard worker before its answers are merged, an older answer).
ALTER TABLE ops.llm_calls ADD COLUMN IF NOT EXISTS served_model VARCHAR;
ALTER TABLE ops.llm_calls ADD COLUMN IF NOT EXISTS run_id BIGINT;
ALTER TABLE ops.llm_call_history ADD COLUMN IF NOT EXISTS served_model VARCHAR;
ALTER TABLE ops.llm_call_history ADD COLUMN IF NOT EXISTS run_id BIGINT;
-- The run a run was started inside (a builder's run inside the nightly's): what a night cost sums its runs.
ALTER TABLE ops.runs ADD COLUMN IF NOT EXISTS parent_run_id BIGINT;

-- `caseforge llm stats`: per step, backend, model and the model that served, what the cache holds and what it
-- cost to make. model_s is the sum of each answer's seconds from sending to the whole answer (its attempts
-- together), summed in whole milliseconds so the sum does not depend on the order DuckDB adds them in.
CREATE OR REPLACE VIEW ops.llm_call_stats AS
WITH replaced AS (
    SELECT step, backend, model, coalesce(served_model, '') AS served, count(*) AS replaced
    FROM ops.llm_call_history
    GROUP BY ALL
)
SELECT c.step,
       c.backend,
       c.model,
       coalesce(c.served_model, 'not recorded')     AS served_model,
       count(*)                                     AS calls,
       count(*) FILTER (WHERE c.status = 'ok')      AS ok,
       count(*) FILTER (WHERE c.status = 'failed')  AS failed,
       count(*) FILTER (WHERE c.status = 'unanswered') AS unanswered,
       sum(c.attempts)::BIGINT                      AS attempts,
       coalesce(sum(c.prompt_tokens), 0)::BIGINT    AS prompt_tokens,
       coalesce(sum(c.completion_tokens), 0)::BIGINT AS completion_tokens,
       (coalesce(sum(round(c.latency_ms)::BIGINT), 0) / 1000.0)::DOUBLE AS model_s,
       avg(c.latency_ms)                            AS mean_latency_ms,
       max(c.created_at)                            AS last_call_at,
       coalesce(any_value(r.replaced), 0)::BIGINT   AS replaced
FROM ops.llm_calls c
LEFT JOIN replaced r ON r.step = c.step AND r.backend = c.backend AND r.model = c.model
                    AND r.served = coalesce(c.served_model, '')
GROUP BY c.step, c.backend, c.model, c.served_model;

-- What each run's LLM calls cost: every answer a run asked for (those a later refresh replaced too, kept in
-- ops.llm_call_history), per step, backend, model and served model. Cache hits are not calls: they cost nothing
-- tonight. A view, so the Parquet mirror carries its few rows (`llm stats --run N` answers while a run holds the
-- warehouse, and from a published mirror).
CREATE OR REPLACE VIEW ops.llm_run_costs AS
WITH asked AS (
    SELECT run_id, step, backend, model, served_model, status, attempts, prompt_tokens, completion_tokens, latency_ms
    FROM ops.llm_calls WHERE run_id IS NOT NULL
    UNION ALL
    SELECT run_id, step, backend, model, served_model, status, attempts, prompt_tokens, completion_tokens, latency_ms
    FROM ops.llm_call_history WHERE run_id IS NOT NULL
)
SELECT run_id,
       step,
       backend,
       model,
       coalesce(served_model, 'not recorded')      AS served_model,
       count(*)                                    AS calls,
       count(*) FILTER (WHERE status = 'ok')       AS ok,
       sum(attempts)::BIGINT                       AS attempts,
       coalesce(sum(prompt_tokens), 0)::BIGINT     AS prompt_tokens,
       coalesce(sum(completion_tokens), 0)::BIGINT AS completion_tokens,
       (coalesce(sum(round(latency_ms)::BIGINT), 0) / 1000.0)::DOUBLE AS model_s
FROM asked
GROUP BY ALL;
