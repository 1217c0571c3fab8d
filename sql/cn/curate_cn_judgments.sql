-- Upsert new and changed judgments from staging; unchanged rows are left as they are. A changed judgment's row is
-- deleted and written again (the table has no index, migration 130: only this statement keeps doc_id unique).
DELETE FROM curated.cn_judgments
WHERE doc_id IN (SELECT s.doc_id FROM staging.cn_judgments s
                 JOIN curated.cn_judgments c USING (doc_id)
                 WHERE c.content_sha256 <> s.content_sha256);
INSERT INTO curated.cn_judgments
SELECT s.doc_id, s.source_format, s.case_name, s.case_no, s.case_year, s.court_code, s.case_kind, s.case_seq,
       s.court, s.judgment_date, s.doc_type, s.case_type, s.procedure, s.simplified, s.cause,
       s.header, s.parties, s.procedure_record, s.claims, s.defense, s.evidence, s.facts, s.reasoning,
       s.judgment, s.tail, s.full_text, s.complete, s.gold_sections, s.gold_agreement,
       s.content_sha256, s.raw_key, s.raw_sha256, now()
FROM staging.cn_judgments s
WHERE NOT EXISTS (SELECT 1 FROM curated.cn_judgments c WHERE c.doc_id = s.doc_id);
