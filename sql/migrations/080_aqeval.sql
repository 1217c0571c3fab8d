-- AQuAECHR attributed-QA evaluation: runs, per-item outputs (answer, citations, per-sentence attribution), metrics.
CREATE TABLE IF NOT EXISTS eval.aquaechr_runs (
    run_id        VARCHAR PRIMARY KEY,     -- hash of system, model, dataset and parameters
    system        VARCHAR NOT NULL,        -- closed-book | rtg-vanilla | rtg-llatrieval | posthoc-vanilla | posthoc-rarr
    llm           VARCHAR,
    model         VARCHAR,
    nli           VARCHAR NOT NULL,        -- the NLI judge used by the NLI metrics
    bertscore_model VARCHAR,               -- local model of BERTScore, or NULL with the skip reason in params
    dataset       VARCHAR NOT NULL,
    dataset_sha   VARCHAR NOT NULL,
    corpus        VARCHAR NOT NULL,        -- what the passage corpus was made of
    params        JSON NOT NULL,
    n_items       INTEGER NOT NULL,
    n_failed      INTEGER NOT NULL,
    started_at    TIMESTAMPTZ NOT NULL,
    finished_at   TIMESTAMPTZ
);

CREATE TABLE IF NOT EXISTS eval.aquaechr_outputs (
    run_id        VARCHAR NOT NULL,
    item_id       VARCHAR NOT NULL,
    question      VARCHAR NOT NULL,
    answer        VARCHAR,                 -- the system's final answer, citation markers included
    shown         JSON,                    -- passage ids shown as [Doc 1..k]
    citations     JSON,                    -- distinct valid cited passage ids, plus invalid doc numbers
    sentences     JSON,                    -- per sentence: text, citations, cited-text-entails verdict
    gold_citations JSON,
    scores        JSON,
    status        VARCHAR NOT NULL,        -- ok | failed
    reason        VARCHAR,
    PRIMARY KEY (run_id, item_id)
);

CREATE TABLE IF NOT EXISTS eval.aquaechr_metrics (
    run_id        VARCHAR NOT NULL,
    metric        VARCHAR NOT NULL,
    value         DOUBLE,                  -- NULL: not applicable or skipped (see note)
    note          VARCHAR,
    PRIMARY KEY (run_id, metric)
);
