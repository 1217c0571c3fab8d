-- Oyez: U.S. Supreme Court case summaries.
CREATE TABLE IF NOT EXISTS staging.scotus_cases (
    case_id BIGINT, name VARCHAR, term VARCHAR, docket VARCHAR, decided_date DATE, argued_date DATE,
    first_party VARCHAR, second_party VARCHAR, first_party_label VARCHAR, second_party_label VARCHAR,
    facts VARCHAR, question VARCHAR, conclusion VARCHAR, description VARCHAR,
    decision_type VARCHAR, majority_vote INTEGER, minority_vote INTEGER, winning_party VARCHAR,
    decision_count INTEGER, decisions JSON,
    citation VARCHAR, citation_volume INTEGER, citation_page INTEGER, citation_year INTEGER,
    lower_court VARCHAR, manner_of_jurisdiction VARCHAR, justia_url VARCHAR, source_url VARCHAR,
    raw_sha256 VARCHAR
);

CREATE TABLE IF NOT EXISTS curated.scotus_cases (
    case_id BIGINT PRIMARY KEY, name VARCHAR NOT NULL, term VARCHAR, docket VARCHAR,
    decided_date DATE, argued_date DATE,
    first_party VARCHAR, second_party VARCHAR, first_party_label VARCHAR, second_party_label VARCHAR,
    facts VARCHAR, question VARCHAR, conclusion VARCHAR, description VARCHAR,
    decision_type VARCHAR, majority_vote INTEGER, minority_vote INTEGER, winning_party VARCHAR,
    decision_count INTEGER, decisions JSON,
    citation VARCHAR, citation_volume INTEGER, citation_page INTEGER, citation_year INTEGER,
    lower_court VARCHAR, manner_of_jurisdiction VARCHAR, justia_url VARCHAR, source_url VARCHAR,
    raw_sha256 VARCHAR NOT NULL,
    disposition VARCHAR,              -- from the legacy Oyez-derived table; the API has none
    updated_at TIMESTAMPTZ NOT NULL
);

-- The 2,999-case Oyez-derived table (justice.csv) that carries `disposition`.
CREATE TABLE IF NOT EXISTS staging.scotus_legacy (
    case_id BIGINT, name VARCHAR, source_url VARCHAR, docket VARCHAR, term VARCHAR,
    first_party VARCHAR, second_party VARCHAR, facts VARCHAR, majority_vote INTEGER, minority_vote INTEGER,
    first_party_winner BOOLEAN, decision_type VARCHAR, disposition VARCHAR, issue_area VARCHAR,
    raw_sha256 VARCHAR
);
CREATE TABLE IF NOT EXISTS curated.scotus_legacy (
    case_id BIGINT PRIMARY KEY, name VARCHAR NOT NULL, source_url VARCHAR, docket VARCHAR, term VARCHAR,
    first_party VARCHAR, second_party VARCHAR, facts VARCHAR, majority_vote INTEGER, minority_vote INTEGER,
    first_party_winner BOOLEAN, decision_type VARCHAR, disposition VARCHAR, issue_area VARCHAR,
    raw_sha256 VARCHAR NOT NULL
);

-- What the case list said of each case at the last refresh: a detail is fetched again only
-- when its summary changed (or on --full).
CREATE TABLE IF NOT EXISTS ops.oyez_list_state (
    key          VARCHAR PRIMARY KEY,     -- '{term}/{docket}' as in the detail URL
    href         VARCHAR NOT NULL,
    summary_sha  VARCHAR NOT NULL,
    seen_at      TIMESTAMPTZ NOT NULL
);
