-- Upsert staged items; an unchanged item keeps its row (and its updated_at).
INSERT OR REPLACE INTO curated.casegen_items
SELECT s.item_id, s.doc_id, s.task, s.inputs, s.reference, s.source, s.evidence_count,
       s.evidence_with_content, s.content_sha256, now()
FROM staging.casegen_items s
LEFT JOIN curated.casegen_items c USING (item_id)
WHERE c.item_id IS NULL OR c.content_sha256 <> s.content_sha256;
