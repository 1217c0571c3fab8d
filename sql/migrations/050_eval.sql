-- Evaluation runs, their per-item outputs and metrics; the Bar Exam QA data CASE runs on.
CREATE TABLE IF NOT EXISTS eval.runs (
    eval_run_id   VARCHAR PRIMARY KEY,     -- hash of task, system, dataset and parameters
    task          VARCHAR NOT NULL,        -- casefacts | barexam
    system        VARCHAR NOT NULL,        -- bm25, qlm, dense, hybrid, closed-book, retrieve-verify, case, ...
    dataset       VARCHAR NOT NULL,        -- file name or table the items came from
    dataset_sha   VARCHAR NOT NULL,
    params        JSON NOT NULL,
    n_items       INTEGER NOT NULL,
    n_failed      INTEGER NOT NULL,
    started_at    TIMESTAMPTZ NOT NULL,
    finished_at   TIMESTAMPTZ
);

CREATE TABLE IF NOT EXISTS eval.item_outputs (
    eval_run_id   VARCHAR NOT NULL,
    item_id       VARCHAR NOT NULL,
    gold          JSON,                    -- gold label / answer and gold evidence ids
    predicted     JSON,                    -- predicted label / answer and evidence ids (ranked)
    scores        JSON,                    -- per-item metric values
    status        VARCHAR NOT NULL,        -- ok | failed | skipped
    reason        VARCHAR,                 -- why failed or skipped
    PRIMARY KEY (eval_run_id, item_id)
);

CREATE TABLE IF NOT EXISTS eval.metrics (
    eval_run_id   VARCHAR NOT NULL,
    metric        VARCHAR NOT NULL,
    value         DOUBLE,
    PRIMARY KEY (eval_run_id, metric)
);

CREATE TABLE IF NOT EXISTS staging.barexam_questions (
    question_id VARCHAR, dataset VARCHAR, source VARCHAR, subject VARCHAR, prompt VARCHAR, question VARCHAR,
    choice_a VARCHAR, choice_b VARCHAR, choice_c VARCHAR, choice_d VARCHAR, answer VARCHAR,
    gold_passage_id VARCHAR, raw_sha256 VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.barexam_questions (
    question_id VARCHAR PRIMARY KEY, dataset VARCHAR, source VARCHAR, subject VARCHAR, prompt VARCHAR,
    question VARCHAR NOT NULL,
    choice_a VARCHAR NOT NULL, choice_b VARCHAR NOT NULL, choice_c VARCHAR, choice_d VARCHAR,   -- a few have 3 options
    answer VARCHAR NOT NULL, gold_passage_id VARCHAR, raw_sha256 VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS staging.barexam_passages (
    passage_id VARCHAR, source VARCHAR, text VARCHAR, raw_sha256 VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.barexam_passages (
    passage_id VARCHAR PRIMARY KEY, source VARCHAR, text VARCHAR NOT NULL, raw_sha256 VARCHAR NOT NULL
);
