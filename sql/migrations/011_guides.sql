-- ECHR case-law guides: paragraphs, citations and their resolution to HUDOC judgments.
CREATE TABLE IF NOT EXISTS staging.guide_paragraphs (
    guide_id VARCHAR, para_no VARCHAR, heading_path VARCHAR, text VARCHAR, guide_version_date DATE,
    pages INTEGER[], ordinal INTEGER, raw_sha256 VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.guide_paragraphs (
    guide_id VARCHAR NOT NULL, para_no VARCHAR NOT NULL, heading_path VARCHAR, text VARCHAR NOT NULL,
    guide_version_date DATE, pages INTEGER[], ordinal INTEGER NOT NULL, raw_sha256 VARCHAR NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (guide_id, para_no)
);

CREATE TABLE IF NOT EXISTS staging.guide_citations (
    guide_id VARCHAR, para_no VARCHAR, ordinal INTEGER, case_name VARCHAR, applicant VARCHAR, respondent VARCHAR,
    year INTEGER, grand_chamber BOOLEAN, is_decision BOOLEAN, no_number VARCHAR, pinpoints INTEGER[],
    whole_case BOOLEAN, signal VARCHAR, is_ibid BOOLEAN, repeats_previous BOOLEAN, raw_citation VARCHAR,
    itemid VARCHAR, resolution_method VARCHAR, linked_title VARCHAR, unresolved_reason VARCHAR, raw_sha256 VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.guide_citations (
    guide_id VARCHAR NOT NULL, para_no VARCHAR NOT NULL, ordinal INTEGER NOT NULL, case_name VARCHAR NOT NULL,
    applicant VARCHAR, respondent VARCHAR, year INTEGER, grand_chamber BOOLEAN, is_decision BOOLEAN,
    no_number VARCHAR, pinpoints INTEGER[], whole_case BOOLEAN NOT NULL, signal VARCHAR, is_ibid BOOLEAN,
    repeats_previous BOOLEAN, raw_citation VARCHAR,
    itemid VARCHAR,                 -- resolved HUDOC judgment; NULL when unresolved
    resolution_method VARCHAR,      -- link | link_fr_to_en | link_fr | name_year
    linked_title VARCHAR,
    unresolved_reason VARCHAR,
    raw_sha256 VARCHAR NOT NULL, updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (guide_id, para_no, ordinal)
);

-- French → English itemids of cited cases (only rows whose English side is a judgment).
CREATE TABLE IF NOT EXISTS curated.echr_itemid_translations (
    fre_id VARCHAR PRIMARY KEY, eng_id VARCHAR NOT NULL, eng_docname VARCHAR
);

-- Each pinpoint of a resolved citation, with the judgment paragraph it names when we hold it.
CREATE OR REPLACE VIEW curated.guide_citation_pinpoints AS
SELECT c.guide_id, c.para_no, c.ordinal, c.itemid, p.pinpoint,
       e.ordinal AS echr_paragraph_ordinal, e.text AS echr_paragraph_text
FROM curated.guide_citations c
CROSS JOIN LATERAL (SELECT unnest(c.pinpoints) AS pinpoint) p
LEFT JOIN curated.echr_paragraphs e
       ON e.itemid = c.itemid AND e.part = 'judgment' AND coalesce(e.section, '') <> 'OPERATIVE'
      AND e.para_no = CAST(p.pinpoint AS VARCHAR);
