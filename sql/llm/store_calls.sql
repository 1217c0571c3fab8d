-- Store answered calls (the registered Arrow table llm_call_rows: a job's batch or merged worker shards).
-- One row per identity, the best answer winning (ok, then failed, then unanswered: a request no endpoint
-- answered), the newest among equals: a failure never replaces an ok answer, and an outage never replaces
-- an answer at all. A refresh ($refresh) replaces an answer with any newer answer (an outage still never);
-- the replaced answer was kept in ops.llm_call_history first (llm/keep_replaced_calls.sql).
INSERT OR REPLACE INTO ops.llm_calls (identity, step, backend, model, template_id, template_sha, request,
    response_text, parsed, status, error, attempts, prompt_tokens, completion_tokens, latency_ms, created_at,
    served_model, run_id)
SELECT s.identity, s.step, s.backend, s.model, s.template_id, s.template_sha, s.request,
    s.response_text, s.parsed, s.status, s.error, s.attempts, s.prompt_tokens, s.completion_tokens,
    s.latency_ms, s.created_at, s.served_model, s.run_id
FROM llm_call_rows s
LEFT JOIN ops.llm_calls c ON c.identity = s.identity
WHERE c.identity IS NULL
   OR (CASE s.status WHEN 'ok' THEN 2 WHEN 'failed' THEN 1 ELSE 0 END)
      >= (CASE c.status WHEN 'ok' THEN 2 WHEN 'failed' THEN 1 ELSE 0 END)
   OR ($refresh AND s.status <> 'unanswered')
QUALIFY row_number() OVER (PARTITION BY s.identity
                           ORDER BY (CASE s.status WHEN 'ok' THEN 2 WHEN 'failed' THEN 1 ELSE 0 END) DESC,
                                    s.created_at DESC) = 1;
