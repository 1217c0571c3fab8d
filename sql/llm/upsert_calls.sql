-- Store a batch of answered calls (the registered Arrow table llm_call_rows), newest answer wins.
INSERT OR REPLACE INTO ops.llm_calls (identity, step, backend, model, template_id, template_sha, request,
    response_text, parsed, status, error, attempts, prompt_tokens, completion_tokens, latency_ms, created_at)
SELECT identity, step, backend, model, template_id, template_sha, request,
    response_text, parsed, status, error, attempts, prompt_tokens, completion_tokens, latency_ms, created_at
FROM llm_call_rows;
