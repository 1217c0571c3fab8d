-- The decisions of one run (_rows: doc_id, filter_config, kept, reasons, decided_at, judgment_updated_at), all
-- in one statement; a judgment decided again replaces its earlier decision under the same configuration.
INSERT OR REPLACE INTO curated.cn_filter_decisions (doc_id, filter_config, kept, reasons, decided_at, judgment_updated_at)
SELECT doc_id, filter_config, kept, CAST(reasons AS JSON), decided_at, judgment_updated_at FROM _rows;
