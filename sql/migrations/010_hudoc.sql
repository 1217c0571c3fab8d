-- HUDOC: ECHR judgment metadata and judgment paragraphs.
CREATE TABLE IF NOT EXISTS staging.echr_judgments (
    itemid VARCHAR, docname VARCHAR, doctype VARCHAR, language VARCHAR, judgment_date DATE,
    appnos VARCHAR[], articles VARCHAR[], importance INTEGER, chamber VARCHAR, respondents VARCHAR[],
    ecli VARCHAR, conclusion VARCHAR, originating_body_code VARCHAR, originating_body VARCHAR,
    originating_body_type VARCHAR, separate_opinion BOOLEAN, is_placeholder BOOLEAN, application VARCHAR,
    cited_case_law VARCHAR, source_url VARCHAR, raw_sha256 VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.echr_judgments (
    itemid VARCHAR PRIMARY KEY, docname VARCHAR, doctype VARCHAR, language VARCHAR, judgment_date DATE NOT NULL,
    appnos VARCHAR[], articles VARCHAR[], importance INTEGER, chamber VARCHAR, respondents VARCHAR[],
    ecli VARCHAR, conclusion VARCHAR, originating_body_code VARCHAR, originating_body VARCHAR,
    originating_body_type VARCHAR, separate_opinion BOOLEAN, is_placeholder BOOLEAN, application VARCHAR,
    cited_case_law VARCHAR, source_url VARCHAR, raw_sha256 VARCHAR NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- One row per printed paragraph (or unnumbered block of an opinion / the operative part).
CREATE TABLE IF NOT EXISTS staging.echr_paragraphs (
    itemid VARCHAR, para_no VARCHAR, part VARCHAR, section VARCHAR, heading_path VARCHAR, text VARCHAR,
    ordinal INTEGER, footnotes VARCHAR[], source_format VARCHAR, raw_sha256 VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.echr_paragraphs (
    itemid VARCHAR NOT NULL, para_no VARCHAR, part VARCHAR NOT NULL, section VARCHAR, heading_path VARCHAR,
    text VARCHAR NOT NULL, ordinal INTEGER NOT NULL, footnotes VARCHAR[], source_format VARCHAR,
    raw_sha256 VARCHAR NOT NULL, updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (itemid, ordinal)
);
