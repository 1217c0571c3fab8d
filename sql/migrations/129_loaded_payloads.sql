-- Payloads whose rows are in curated as a parser version made them: a later run skips such a payload
-- before parsing it (caseforge.archive.ParsedPayloads). One row per (source, key): the content last loaded.
CREATE TABLE IF NOT EXISTS ops.loaded_payloads (
    source     VARCHAR NOT NULL,
    key        VARCHAR NOT NULL,
    sha256     VARCHAR NOT NULL,
    parser     VARCHAR NOT NULL,       -- parser name/version, and any option that changes its rows
    records    BIGINT NOT NULL,        -- rows it gave to its table (counted as unchanged when skipped)
    rows       BIGINT NOT NULL,        -- rows of the table carrying its hash right after the load
    run_id     BIGINT,
    loaded_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (source, key)
);

-- The judgment row (its updated_at) each filter decision was made on: a later run decides again only
-- judgments that are new or were loaded again since.
ALTER TABLE curated.cn_filter_decisions ADD COLUMN IF NOT EXISTS judgment_updated_at TIMESTAMPTZ;
