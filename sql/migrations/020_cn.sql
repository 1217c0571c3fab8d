-- Chinese court judgments (裁判文书): parsed documents, filter decisions, representatives.
CREATE TABLE IF NOT EXISTS staging.cn_judgments (
    doc_id VARCHAR, source_format VARCHAR, case_name VARCHAR, case_no VARCHAR,
    case_year INTEGER, court_code VARCHAR, case_kind VARCHAR, case_seq BIGINT,
    court VARCHAR, judgment_date DATE, doc_type VARCHAR, case_type VARCHAR, procedure VARCHAR,
    simplified VARCHAR, cause VARCHAR,
    header VARCHAR, parties VARCHAR, procedure_record VARCHAR, claims VARCHAR, defense VARCHAR,
    evidence VARCHAR, facts VARCHAR, reasoning VARCHAR, judgment VARCHAR, tail VARCHAR,
    full_text VARCHAR, complete BOOLEAN,
    gold_sections JSON, gold_agreement JSON,
    content_sha256 VARCHAR, raw_key VARCHAR, raw_sha256 VARCHAR
);

CREATE TABLE IF NOT EXISTS curated.cn_judgments (
    doc_id VARCHAR PRIMARY KEY, source_format VARCHAR NOT NULL, case_name VARCHAR, case_no VARCHAR,
    case_year INTEGER, court_code VARCHAR, case_kind VARCHAR, case_seq BIGINT,   -- parts of case_no
    court VARCHAR, judgment_date DATE, doc_type VARCHAR, case_type VARCHAR, procedure VARCHAR,
    simplified VARCHAR, cause VARCHAR,
    header VARCHAR, parties VARCHAR, procedure_record VARCHAR, claims VARCHAR, defense VARCHAR,
    evidence VARCHAR, facts VARCHAR, reasoning VARCHAR, judgment VARCHAR, tail VARCHAR,
    full_text VARCHAR NOT NULL, complete BOOLEAN NOT NULL,
    gold_sections JSON,          -- sections the dump carried (s22–s28, CAIL/CaseFormer/JuDGE fields)
    gold_agreement JSON,         -- per gold section: similarity of what the parser found (0–1)
    content_sha256 VARCHAR NOT NULL,   -- of the record as parsed; a change re-curates the row
    raw_key VARCHAR, raw_sha256 VARCHAR NOT NULL,   -- the archived payload (file or API response)
    updated_at TIMESTAMPTZ NOT NULL
);

-- One row per document and filter configuration: kept or not, and every reason it was not.
CREATE TABLE IF NOT EXISTS curated.cn_filter_decisions (
    doc_id VARCHAR NOT NULL, filter_config VARCHAR NOT NULL, kept BOOLEAN NOT NULL,
    reasons JSON NOT NULL, decided_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (doc_id, filter_config)
);

-- Representatives picked across K-Means clusters of the kept documents' embeddings.
CREATE TABLE IF NOT EXISTS curated.cn_representatives (
    selection VARCHAR NOT NULL,   -- name of the selection (embedder, k, n, seed, filter config)
    doc_id VARCHAR NOT NULL, cluster INTEGER NOT NULL, distance DOUBLE NOT NULL,
    rank_in_cluster INTEGER NOT NULL, cluster_size INTEGER NOT NULL,
    embedder VARCHAR NOT NULL, n_clusters INTEGER NOT NULL, seed INTEGER NOT NULL,
    selected_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (selection, doc_id)
);
