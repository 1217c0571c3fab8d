-- One document's decision under one filter configuration (earlier ones were deleted in the same transaction).
INSERT INTO curated.cn_filter_decisions (doc_id, filter_config, kept, reasons, decided_at) VALUES (?, ?, ?, ?, ?);
