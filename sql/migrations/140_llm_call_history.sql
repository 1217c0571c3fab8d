-- Answers a refresh replaced (`--refresh`: ask again what the cache already answered). ops.llm_calls keeps one
-- row per request identity, the answer in force; the answer it replaced moves here, so nothing answered is lost.
CREATE TABLE IF NOT EXISTS ops.llm_call_history (
    identity          VARCHAR NOT NULL,
    step              VARCHAR NOT NULL,
    backend           VARCHAR NOT NULL,
    model             VARCHAR NOT NULL,
    template_id       VARCHAR,
    template_sha      VARCHAR,
    request           JSON NOT NULL,
    response_text     VARCHAR,
    parsed            JSON,
    status            VARCHAR NOT NULL,
    error             VARCHAR,
    attempts          INTEGER NOT NULL,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    latency_ms        DOUBLE,
    created_at        TIMESTAMPTZ NOT NULL,
    replaced_at       TIMESTAMPTZ NOT NULL
);

-- `caseforge llm stats`, now with the earlier answers a refresh kept (replaced).
CREATE OR REPLACE VIEW ops.llm_call_stats AS
WITH replaced AS (
    SELECT step, backend, model, count(*) AS replaced
    FROM ops.llm_call_history
    GROUP BY step, backend, model
)
SELECT c.step,
       c.backend,
       c.model,
       count(*)                                     AS calls,
       count(*) FILTER (WHERE c.status = 'ok')      AS ok,
       count(*) FILTER (WHERE c.status = 'failed')  AS failed,
       count(*) FILTER (WHERE c.status = 'unanswered') AS unanswered,
       sum(c.attempts)::BIGINT                      AS attempts,
       coalesce(sum(c.prompt_tokens), 0)::BIGINT    AS prompt_tokens,
       coalesce(sum(c.completion_tokens), 0)::BIGINT AS completion_tokens,
       avg(c.latency_ms)                            AS mean_latency_ms,
       max(c.created_at)                            AS last_call_at,
       coalesce(any_value(r.replaced), 0)::BIGINT   AS replaced
FROM ops.llm_calls c
LEFT JOIN replaced r ON r.step = c.step AND r.backend = c.backend AND r.model = c.model
GROUP BY c.step, c.backend, c.model;
