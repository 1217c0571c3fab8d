-- AQuAECHR: attributed question–answer pairs built from the ECHR case-law guides.
-- Every generated candidate lands here, kept or not; a removed one says why (removal_reason).
CREATE TABLE IF NOT EXISTS staging.aquaechr_qa (
    qa_id VARCHAR, guide_id VARCHAR, window_id VARCHAR, strategy VARCHAR, question VARCHAR, answer VARCHAR,
    citations JSON, context_para_nos JSON, comprehensiveness INTEGER, conciseness INTEGER, fluency INTEGER,
    judge_analysis VARCHAR, kept BOOLEAN, removal_reason VARCHAR, n_answer_sentences INTEGER,
    n_cited_paragraphs INTEGER, run_id BIGINT
);
CREATE TABLE IF NOT EXISTS curated.aquaechr_qa (
    qa_id VARCHAR PRIMARY KEY,
    guide_id VARCHAR NOT NULL,
    window_id VARCHAR NOT NULL,          -- the source paragraphs the question was generated from
    strategy VARCHAR NOT NULL,           -- i | ii | iii | iv-a | iv-b | iv-c
    question VARCHAR,
    answer VARCHAR,                      -- the chosen guide sentences, verbatim
    citations JSON,                      -- per answer sentence: its citations → itemid, pinpoints, passages
    context_para_nos JSON,               -- the guide paragraphs whose sentences were shown for the answer
    comprehensiveness INTEGER, conciseness INTEGER, fluency INTEGER,
    judge_analysis VARCHAR,
    kept BOOLEAN NOT NULL,
    removal_reason VARCHAR,
    n_answer_sentences INTEGER,
    n_cited_paragraphs INTEGER,
    run_id BIGINT,
    updated_at TIMESTAMPTZ NOT NULL
);
