-- Batch upsert of tasks a document could not give, from the registered relation _rows.
INSERT OR REPLACE INTO curated.casegen_item_skips
SELECT source, doc_id, task, reason, run_id FROM _rows;
