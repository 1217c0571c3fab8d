-- Schemas and the operational tables every source and pipeline shares.
CREATE SCHEMA IF NOT EXISTS ops;
CREATE SCHEMA IF NOT EXISTS staging;
CREATE SCHEMA IF NOT EXISTS curated;
CREATE SCHEMA IF NOT EXISTS eval;

-- Append-only, content-addressed archive: one row per distinct (source, key, body).
CREATE TABLE IF NOT EXISTS ops.raw_payloads (
    source       VARCHAR NOT NULL,
    key          VARCHAR NOT NULL,
    sha256       VARCHAR NOT NULL,
    url          VARCHAR,
    fetched_at   TIMESTAMPTZ NOT NULL,
    http_status  INTEGER,
    content_type VARCHAR,
    body         BLOB NOT NULL,
    PRIMARY KEY (source, key, sha256)
);

-- Validators for conditional GET, per URL.
CREATE TABLE IF NOT EXISTS ops.http_validators (
    url           VARCHAR PRIMARY KEY,
    etag          VARCHAR,
    last_modified VARCHAR,
    sha256        VARCHAR,
    checked_at    TIMESTAMPTZ NOT NULL
);

CREATE SEQUENCE IF NOT EXISTS ops.run_id_seq;
CREATE TABLE IF NOT EXISTS ops.runs (
    run_id      BIGINT PRIMARY KEY DEFAULT nextval('ops.run_id_seq'),
    kind        VARCHAR NOT NULL,          -- e.g. 'ingest', 'build', 'eval'
    target      VARCHAR NOT NULL,          -- e.g. 'oyez'
    started_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    status      VARCHAR NOT NULL,          -- running | succeeded | failed | quarantined
    counts      JSON,
    message     VARCHAR
);

CREATE TABLE IF NOT EXISTS ops.quality_results (
    run_id          BIGINT,
    table_name      VARCHAR NOT NULL,
    suite           VARCHAR NOT NULL,
    validated_at    TIMESTAMPTZ NOT NULL,
    success         BOOLEAN NOT NULL,
    rows_checked    BIGINT NOT NULL,
    rows_failed     BIGINT NOT NULL,
    batch_rejected  BOOLEAN NOT NULL,
    failed_expectations JSON,
    result          JSON
);

CREATE TABLE IF NOT EXISTS ops.quarantine (
    run_id         BIGINT,
    table_name     VARCHAR NOT NULL,
    source_key     VARCHAR,
    stage          VARCHAR NOT NULL,      -- fetch | parse | gate
    reason         VARCHAR NOT NULL,
    row_data       JSON,
    raw_sha256     VARCHAR,
    quarantined_at TIMESTAMPTZ NOT NULL
);
