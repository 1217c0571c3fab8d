-- One line per step and model: what the LLM cache holds (hits are not stored, only answered calls).
SELECT step,
       backend,
       model,
       count(*)                                   AS calls,
       count(*) FILTER (WHERE status = 'ok')      AS ok,
       count(*) FILTER (WHERE status <> 'ok')     AS failed,
       sum(attempts)                              AS attempts,
       coalesce(sum(prompt_tokens), 0)            AS prompt_tokens,
       coalesce(sum(completion_tokens), 0)        AS completion_tokens,
       round(avg(latency_ms), 1)                  AS mean_latency_ms,
       max(created_at)                            AS last_call_at
FROM ops.llm_calls
WHERE ($step IS NULL OR step = $step)
GROUP BY step, backend, model
ORDER BY step, backend, model;
