-- Nightly operations: what each stage of a nightly run did, and the input fingerprints that let
-- a builder or an export skip work when its inputs did not change.
CREATE TABLE IF NOT EXISTS ops.nightly_stages (
    run_id      BIGINT NOT NULL,          -- the nightly's row in ops.runs
    stage       VARCHAR NOT NULL,         -- source | builder | export
    name        VARCHAR NOT NULL,         -- e.g. 'oyez', 'casefacts', 'scotus'
    status      VARCHAR NOT NULL,         -- succeeded | failed | quarantined | skipped
    counts      JSON,
    duration_s  DOUBLE,
    message     VARCHAR,
    finished_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, stage, name)
);

-- The fingerprint of a builder's (or an export's) input tables when it last succeeded.
CREATE TABLE IF NOT EXISTS ops.input_fingerprints (
    stage        VARCHAR NOT NULL,        -- builder | export
    name         VARCHAR NOT NULL,
    fingerprint  VARCHAR NOT NULL,
    inputs       JSON NOT NULL,           -- table -> {rows, hash}
    run_id       BIGINT,
    recorded_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (stage, name)
);
