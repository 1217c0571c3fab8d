-- The CaseGen items as released: each with its source document's court, date and archived payload.
SELECT i.item_id, i.task, i.doc_id, i.source, i.inputs, i.reference, i.evidence_count, i.evidence_with_content,
       j.court, j.judgment_date, j.case_year, i.content_sha256, j.raw_sha256 AS source_payload_sha256
FROM curated.casegen_items i
LEFT JOIN curated.cn_judgments j ON j.doc_id = i.doc_id AND i.source = 'cn_judgments'
ORDER BY i.task, i.item_id;
