-- The ledger of parsed payloads carries no index (as the tables every ingest appends to, migration 130): every
-- night adds a row for each payload it parses and every source reads it, and with its primary key DuckDB 1.5
-- rewrote the whole table (one row group up to 122,880 rows) at every checkpoint after an append: 200 rows more
-- in a ledger of 28,404 cost 1.25 CPU-s each time a stage closed its connection, growing with what is stored.
-- One row per (source, key) stays so by the statement that records a payload (sql/ops/record_parsed_payloads.sql:
-- the key's row deleted, then inserted). The columns, their order, NOT NULLs and defaults are kept.
CREATE TABLE ops.loaded_payloads_rebuilt (
    source         VARCHAR NOT NULL,
    key            VARCHAR NOT NULL,
    sha256         VARCHAR NOT NULL,
    parser         VARCHAR NOT NULL,
    records        BIGINT NOT NULL,
    rows           BIGINT NOT NULL,
    run_id         BIGINT,
    loaded_at      TIMESTAMPTZ NOT NULL,
    quarantined    BIGINT DEFAULT 0,
    problems_since BIGINT,
    checks         VARCHAR
);
INSERT INTO ops.loaded_payloads_rebuilt SELECT * FROM ops.loaded_payloads;
DROP TABLE ops.loaded_payloads;
ALTER TABLE ops.loaded_payloads_rebuilt RENAME TO loaded_payloads;
