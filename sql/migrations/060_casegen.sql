-- CaseGen: drafting tasks built from gold judgment sections, generations, judge scores, metrics.
CREATE TABLE IF NOT EXISTS staging.casegen_items (
    item_id VARCHAR, doc_id VARCHAR, task VARCHAR, inputs JSON, reference VARCHAR, source VARCHAR,
    evidence_count INTEGER, evidence_with_content INTEGER, content_sha256 VARCHAR
);

CREATE TABLE IF NOT EXISTS curated.casegen_items (
    item_id               VARCHAR PRIMARY KEY,
    doc_id                VARCHAR NOT NULL,
    task                  VARCHAR NOT NULL,     -- defense | facts | reasoning | judgment
    inputs                JSON NOT NULL,        -- gold input sections; "evidence": [{name, content, event}]
    reference             VARCHAR NOT NULL,     -- the gold section the task drafts
    source                VARCHAR NOT NULL,     -- cn_judgments | a CaseGen-format file name
    evidence_count        INTEGER NOT NULL,
    evidence_with_content INTEGER NOT NULL,
    content_sha256        VARCHAR NOT NULL,
    updated_at            TIMESTAMPTZ NOT NULL
);

-- A task a document could not give (a gold section absent), with the reason: nothing dropped silently.
CREATE TABLE IF NOT EXISTS curated.casegen_item_skips (
    source  VARCHAR NOT NULL,
    doc_id  VARCHAR NOT NULL,
    task    VARCHAR NOT NULL,
    reason  VARCHAR NOT NULL,
    run_id  BIGINT,
    PRIMARY KEY (source, doc_id, task)
);

CREATE TABLE IF NOT EXISTS eval.casegen_generations (
    item_id              VARCHAR NOT NULL,
    model                VARCHAR NOT NULL,
    backend              VARCHAR NOT NULL,
    task                 VARCHAR NOT NULL,
    request_identity     VARCHAR NOT NULL,     -- ops.llm_calls.identity
    input_cut            BOOLEAN NOT NULL,     -- input cut from the middle to fit the budget
    input_unit           VARCHAR NOT NULL,     -- chars | tokens (of the configured local tokenizer)
    input_length         INTEGER NOT NULL,
    input_length_kept    INTEGER NOT NULL,
    output_text          VARCHAR,
    status               VARCHAR NOT NULL,     -- ok | failed
    error                VARCHAR,
    run_id               BIGINT,
    created_at           TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (item_id, model)
);

-- One row per (item, judged model, judge model, dimension); a missing or invalid score is NULL + reason.
CREATE TABLE IF NOT EXISTS eval.casegen_judgements (
    item_id          VARCHAR NOT NULL,
    model            VARCHAR NOT NULL,
    judge_model      VARCHAR NOT NULL,
    task             VARCHAR NOT NULL,
    dimension        VARCHAR NOT NULL,
    score            DOUBLE,
    status           VARCHAR NOT NULL,         -- ok | missing | invalid | judge_failed
    reason           VARCHAR,
    reply_format     VARCHAR,                  -- json | lines | none
    request_identity VARCHAR NOT NULL,
    run_id           BIGINT,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (item_id, model, judge_model, dimension)
);

-- One row per (item, model, metric): rougeL_char_f1, rougeL_word_f1, rougeL_compat_f1, bleu1..4, bertscore_f1.
CREATE TABLE IF NOT EXISTS eval.casegen_metrics (
    item_id  VARCHAR NOT NULL,
    model    VARCHAR NOT NULL,
    task     VARCHAR NOT NULL,
    metric   VARCHAR NOT NULL,
    value    DOUBLE,
    status   VARCHAR NOT NULL,                 -- ok | skipped
    reason   VARCHAR,
    run_id   BIGINT,
    PRIMARY KEY (item_id, model, metric)
);
