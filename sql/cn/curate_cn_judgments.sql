-- Upsert new and changed judgments from staging; unchanged rows are left as they are.
INSERT OR REPLACE INTO curated.cn_judgments
SELECT s.doc_id, s.source_format, s.case_name, s.case_no, s.case_year, s.court_code, s.case_kind, s.case_seq,
       s.court, s.judgment_date, s.doc_type, s.case_type, s.procedure, s.simplified, s.cause,
       s.header, s.parties, s.procedure_record, s.claims, s.defense, s.evidence, s.facts, s.reasoning,
       s.judgment, s.tail, s.full_text, s.complete, s.gold_sections, s.gold_agreement,
       s.content_sha256, s.raw_key, s.raw_sha256, now()
FROM staging.cn_judgments s
LEFT JOIN curated.cn_judgments c USING (doc_id)
WHERE c.doc_id IS NULL OR c.content_sha256 <> s.content_sha256;
