-- Source health (issue 43): per nightly run and source, what the upstream listed, what was fetched, parsed, loaded
-- and quarantined, the parse yield, and what the rules made of it (caseforge/source_health.py). The rules compare
-- a night with the nights before it, read back from here. `source_status`: the source's own stage tonight;
-- `health`: the source health stage (succeeded | warned | failed, or not_judged when the source itself did not
-- finish); `broken`: the broken rules, one line each.
CREATE TABLE IF NOT EXISTS ops.source_health (
    run_id        BIGINT NOT NULL,
    source        VARCHAR NOT NULL,
    night_at      TIMESTAMPTZ NOT NULL,
    source_status VARCHAR NOT NULL,
    listed        BIGINT,
    fetched       BIGINT NOT NULL,
    parsed        BIGINT NOT NULL,
    loaded        BIGINT NOT NULL,
    quarantined   BIGINT NOT NULL,
    new           BIGINT NOT NULL,
    changed       BIGINT NOT NULL,
    yield_name    VARCHAR,
    yield_value   DOUBLE,
    yield_basis   BIGINT NOT NULL,
    health        VARCHAR NOT NULL,
    broken        VARCHAR
);
