-- The LLM call cache: one row per request identity (model, messages, parameters, schema, template).
CREATE TABLE IF NOT EXISTS ops.llm_calls (
    identity          VARCHAR PRIMARY KEY,
    step              VARCHAR NOT NULL,
    backend           VARCHAR NOT NULL,
    model             VARCHAR NOT NULL,
    template_id       VARCHAR,
    template_sha      VARCHAR,
    request           JSON NOT NULL,
    response_text     VARCHAR,
    parsed            JSON,
    status            VARCHAR NOT NULL,     -- ok | failed
    error             VARCHAR,
    attempts          INTEGER NOT NULL,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    latency_ms        DOUBLE,
    created_at        TIMESTAMPTZ NOT NULL
);
