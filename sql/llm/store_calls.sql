-- Store answered calls (the registered Arrow table llm_call_rows: a job's batch or merged worker shards).
-- One row per identity (an ok answer preferred, then the newest); never let a failure replace an ok answer.
INSERT OR REPLACE INTO ops.llm_calls (identity, step, backend, model, template_id, template_sha, request,
    response_text, parsed, status, error, attempts, prompt_tokens, completion_tokens, latency_ms, created_at)
SELECT s.identity, s.step, s.backend, s.model, s.template_id, s.template_sha, s.request,
    s.response_text, s.parsed, s.status, s.error, s.attempts, s.prompt_tokens, s.completion_tokens,
    s.latency_ms, s.created_at
FROM llm_call_rows s
LEFT JOIN ops.llm_calls c ON c.identity = s.identity
WHERE NOT (c.status IS NOT DISTINCT FROM 'ok' AND s.status <> 'ok')
QUALIFY row_number() OVER (PARTITION BY s.identity ORDER BY (s.status = 'ok') DESC, s.created_at DESC) = 1;
