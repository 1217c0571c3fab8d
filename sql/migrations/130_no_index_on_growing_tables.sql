-- The tables every ingest appends to carry no index. DuckDB 1.5 rewrites the whole last row group of a table
-- with an index (a primary key) at every checkpoint after an append, and a table under 122,880 rows is one row
-- group: 33 new Oyez payloads into an archive of 3,300 cost 0.6 s and 270 MB more than into an empty one, 500
-- judgments into 50,000 0.8 s and 400 MB, growing with what is stored. Without the index an append writes new
-- blocks only. Keys stay unique by the statements that write them (sql/ops/store_payload.sql and the curate
-- statements insert only keys not there) and by the gate's uniqueness checks on every batch.
-- Each table is rebuilt with the same columns, in the same order, and the same NOT NULLs, except the archive's
-- body: NULL for a payload archived from now on, whose body is a file named by its hash in the warehouse's
-- archive folder (caseforge.archive: a body in the table made the same rewrite cost grow with the archive).
-- Rows copied here keep their bodies; the copy is one insert, so they land in row groups a later append leaves.
CREATE TABLE ops.raw_payloads_rebuilt (
    source       VARCHAR NOT NULL,
    key          VARCHAR NOT NULL,
    sha256       VARCHAR NOT NULL,
    url          VARCHAR,
    fetched_at   TIMESTAMPTZ NOT NULL,
    http_status  INTEGER,
    content_type VARCHAR,
    body         BLOB
);
INSERT INTO ops.raw_payloads_rebuilt SELECT * FROM ops.raw_payloads;
DROP TABLE ops.raw_payloads;
ALTER TABLE ops.raw_payloads_rebuilt RENAME TO raw_payloads;

CREATE TABLE curated.scotus_cases_rebuilt (
    case_id BIGINT NOT NULL, name VARCHAR NOT NULL, term VARCHAR, docket VARCHAR,
    decided_date DATE, argued_date DATE,
    first_party VARCHAR, second_party VARCHAR, first_party_label VARCHAR, second_party_label VARCHAR,
    facts VARCHAR, question VARCHAR, conclusion VARCHAR, description VARCHAR,
    decision_type VARCHAR, majority_vote INTEGER, minority_vote INTEGER, winning_party VARCHAR,
    decision_count INTEGER, decisions JSON,
    citation VARCHAR, citation_volume INTEGER, citation_page INTEGER, citation_year INTEGER,
    lower_court VARCHAR, manner_of_jurisdiction VARCHAR, justia_url VARCHAR, source_url VARCHAR,
    raw_sha256 VARCHAR NOT NULL,
    disposition VARCHAR,
    updated_at TIMESTAMPTZ NOT NULL
);
INSERT INTO curated.scotus_cases_rebuilt SELECT * FROM curated.scotus_cases;
DROP TABLE curated.scotus_cases;
ALTER TABLE curated.scotus_cases_rebuilt RENAME TO scotus_cases;

CREATE TABLE curated.echr_judgments_rebuilt (
    itemid VARCHAR NOT NULL, docname VARCHAR, doctype VARCHAR, language VARCHAR, judgment_date DATE NOT NULL,
    appnos VARCHAR[], articles VARCHAR[], importance INTEGER, chamber VARCHAR, respondents VARCHAR[],
    ecli VARCHAR, conclusion VARCHAR, originating_body_code VARCHAR, originating_body VARCHAR,
    originating_body_type VARCHAR, separate_opinion BOOLEAN, is_placeholder BOOLEAN, application VARCHAR,
    cited_case_law VARCHAR, source_url VARCHAR, raw_sha256 VARCHAR NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
INSERT INTO curated.echr_judgments_rebuilt SELECT * FROM curated.echr_judgments;
DROP TABLE curated.echr_judgments;
ALTER TABLE curated.echr_judgments_rebuilt RENAME TO echr_judgments;

CREATE TABLE curated.echr_paragraphs_rebuilt (
    itemid VARCHAR NOT NULL, para_no VARCHAR, part VARCHAR NOT NULL, section VARCHAR, heading_path VARCHAR,
    text VARCHAR NOT NULL, ordinal INTEGER NOT NULL, footnotes VARCHAR[], source_format VARCHAR,
    raw_sha256 VARCHAR NOT NULL, updated_at TIMESTAMPTZ NOT NULL
);
INSERT INTO curated.echr_paragraphs_rebuilt SELECT * FROM curated.echr_paragraphs;
DROP TABLE curated.echr_paragraphs;
ALTER TABLE curated.echr_paragraphs_rebuilt RENAME TO echr_paragraphs;

CREATE TABLE curated.cn_judgments_rebuilt (
    doc_id VARCHAR NOT NULL, source_format VARCHAR NOT NULL, case_name VARCHAR, case_no VARCHAR,
    case_year INTEGER, court_code VARCHAR, case_kind VARCHAR, case_seq BIGINT,
    court VARCHAR, judgment_date DATE, doc_type VARCHAR, case_type VARCHAR, procedure VARCHAR,
    simplified VARCHAR, cause VARCHAR,
    header VARCHAR, parties VARCHAR, procedure_record VARCHAR, claims VARCHAR, defense VARCHAR,
    evidence VARCHAR, facts VARCHAR, reasoning VARCHAR, judgment VARCHAR, tail VARCHAR,
    full_text VARCHAR NOT NULL, complete BOOLEAN NOT NULL,
    gold_sections JSON, gold_agreement JSON,
    content_sha256 VARCHAR NOT NULL,
    raw_key VARCHAR, raw_sha256 VARCHAR NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
INSERT INTO curated.cn_judgments_rebuilt SELECT * FROM curated.cn_judgments;
DROP TABLE curated.cn_judgments;
ALTER TABLE curated.cn_judgments_rebuilt RENAME TO cn_judgments;
