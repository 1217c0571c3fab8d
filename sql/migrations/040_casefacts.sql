-- CaseFacts builder: one table per stage (replaced on each build; answers come from the LLM cache),
-- and the final dataset curated.casefacts_claims.
CREATE TABLE IF NOT EXISTS staging.casefacts_generated (
    claim_id VARCHAR, case_id BIGINT, claim_index INTEGER, claim VARCHAR, model VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.casefacts_generated AS SELECT * FROM staging.casefacts_generated WITH NO DATA;

CREATE TABLE IF NOT EXISTS staging.casefacts_factuality (
    claim_id VARCHAR, case_id BIGINT, supported BOOLEAN, status VARCHAR, reason VARCHAR, model VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.casefacts_factuality AS SELECT * FROM staging.casefacts_factuality WITH NO DATA;

-- kind: contradiction | redundancy; resolution: claim1 | claim2 | neither | merged | keep_both | llm_failed
CREATE TABLE IF NOT EXISTS staging.casefacts_same_case_pairs (
    pair_id VARCHAR, case_id BIGINT, kind VARCHAR, claim_id_1 VARCHAR, claim_id_2 VARCHAR,
    detected BOOLEAN, resolution VARCHAR, corrected_claim VARCHAR, applied BOOLEAN, reason VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.casefacts_same_case_pairs AS SELECT * FROM staging.casefacts_same_case_pairs WITH NO DATA;

-- The claims left after the same-case stage (origin: generated | merged_correction).
CREATE TABLE IF NOT EXISTS staging.casefacts_kept_claims (
    claim_id VARCHAR, case_id BIGINT, claim VARCHAR, origin VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.casefacts_kept_claims AS SELECT * FROM staging.casefacts_kept_claims WITH NO DATA;

CREATE TABLE IF NOT EXISTS staging.casefacts_embeddings (
    claim_id VARCHAR, model VARCHAR, vector FLOAT[]
);
CREATE TABLE IF NOT EXISTS curated.casefacts_embeddings AS SELECT * FROM staging.casefacts_embeddings WITH NO DATA;

-- Judged stratified samples and the windows calibrated from them.
CREATE TABLE IF NOT EXISTS staging.casefacts_calibration_samples (
    pair_id VARCHAR, kind VARCHAR, claim_id_1 VARCHAR, claim_id_2 VARCHAR, similarity DOUBLE,
    bin INTEGER, bin_population BIGINT, detected BOOLEAN, status VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.casefacts_calibration_samples
    AS SELECT * FROM staging.casefacts_calibration_samples WITH NO DATA;
CREATE TABLE IF NOT EXISTS staging.casefacts_windows (
    kind VARCHAR, low DOUBLE, high DOUBLE, positives INTEGER, judged INTEGER, coverage DOUBLE, method VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.casefacts_windows AS SELECT * FROM staging.casefacts_windows WITH NO DATA;

CREATE TABLE IF NOT EXISTS staging.casefacts_cross_pairs (
    pair_id VARCHAR, kind VARCHAR, claim_id_1 VARCHAR, claim_id_2 VARCHAR, case_id_1 BIGINT, case_id_2 BIGINT,
    similarity DOUBLE, detected BOOLEAN, status VARCHAR, reason VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.casefacts_cross_pairs AS SELECT * FROM staging.casefacts_cross_pairs WITH NO DATA;

-- proposal: case1_overruled | case2_overruled | consistent | llm_failed; accepted only after the temporal rule.
CREATE TABLE IF NOT EXISTS staging.casefacts_overrulings (
    pair_id VARCHAR, overruled_claim_id VARCHAR, overruling_claim_id VARCHAR,
    overruled_case_id BIGINT, overruling_case_id BIGINT, overruled_decided DATE, overruling_decided DATE,
    overruling_disposition VARCHAR, proposal VARCHAR, accepted BOOLEAN, reason VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.casefacts_overrulings AS SELECT * FROM staging.casefacts_overrulings WITH NO DATA;

-- One row per overlap group: action keep1 | keep2 | merge | llm_failed.
CREATE TABLE IF NOT EXISTS staging.casefacts_merges (
    group_id VARCHAR, claim_ids JSON, anchor_claim_id_1 VARCHAR, anchor_claim_id_2 VARCHAR,
    action VARCHAR, result_claim VARCHAR, evidence_case_ids JSON, reason VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.casefacts_merges AS SELECT * FROM staging.casefacts_merges WITH NO DATA;

CREATE TABLE IF NOT EXISTS staging.casefacts_negations (
    claim_id VARCHAR, negation VARCHAR, rewrite VARCHAR, status VARCHAR, reason VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.casefacts_negations AS SELECT * FROM staging.casefacts_negations WITH NO DATA;

CREATE TABLE IF NOT EXISTS staging.casefacts_claims (
    claim_id VARCHAR, fact_id VARCHAR, claim VARCHAR, label VARCHAR,
    evidence_case_ids JSON, overruling_case_ids JSON, split VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.casefacts_claims (
    claim_id VARCHAR PRIMARY KEY, fact_id VARCHAR NOT NULL, claim VARCHAR NOT NULL, label VARCHAR NOT NULL,
    evidence_case_ids JSON NOT NULL, overruling_case_ids JSON NOT NULL, split VARCHAR NOT NULL
);

-- What each build used: models and prompt hashes per step (for the dataset card).
CREATE TABLE IF NOT EXISTS ops.casefacts_build_steps (
    run_id BIGINT, step VARCHAR, model VARCHAR, template_id VARCHAR, template_sha VARCHAR, requests INTEGER
);
