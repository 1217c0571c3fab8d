-- One line per step and model: what the LLM cache holds (hits are not stored, only answered calls).
-- ok: a usable answer; failed: an answer that could not be used (cached: asked again only with --retry-failed);
-- unanswered: no endpoint answered (refused or cut connection, missed deadline, 429/5xx after retries): not an
-- answer, asked again by the next run.
SELECT step,
       backend,
       model,
       count(*)                                        AS calls,
       count(*) FILTER (WHERE status = 'ok')           AS ok,
       count(*) FILTER (WHERE status = 'failed')       AS failed,
       count(*) FILTER (WHERE status = 'unanswered')   AS unanswered,
       sum(attempts)                                   AS attempts,
       coalesce(sum(prompt_tokens), 0)                 AS prompt_tokens,
       coalesce(sum(completion_tokens), 0)             AS completion_tokens,
       round(avg(latency_ms), 1)                       AS mean_latency_ms,
       max(created_at)                                 AS last_call_at
FROM ops.llm_calls
WHERE ($step IS NULL OR step = $step)
GROUP BY step, backend, model
ORDER BY step, backend, model;
