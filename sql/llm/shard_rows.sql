-- Every answer a shard worker recorded, in ops.llm_calls column order, for its Parquet shard.
SELECT identity, step, backend, model, template_id, template_sha, CAST(request AS VARCHAR) AS request,
    response_text, CAST(parsed AS VARCHAR) AS parsed, status, error, attempts, prompt_tokens,
    completion_tokens, latency_ms, created_at, served_model, run_id
FROM ops.llm_calls
ORDER BY identity;
