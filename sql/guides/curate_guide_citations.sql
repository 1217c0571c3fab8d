-- A guide's citations are replaced as a whole when any of them changed (resolution may improve as judgments
-- arrive). An unchanged guide keeps its rows and their updated_at, so what the AQuAECHR builder reads keeps its
-- fingerprint and an unchanged night rebuilds nothing. (staging.guide_citations has curated's columns, in
-- order, but updated_at.)
DELETE FROM curated.guide_citations
WHERE guide_id IN (
    SELECT guide_id FROM (SELECT * FROM staging.guide_citations
                          EXCEPT
                          SELECT * EXCLUDE (updated_at) FROM curated.guide_citations)
    UNION ALL
    SELECT guide_id FROM (SELECT * EXCLUDE (updated_at) FROM curated.guide_citations
                          WHERE guide_id IN (SELECT guide_id FROM staging.guide_citations)
                          EXCEPT
                          SELECT * FROM staging.guide_citations));
INSERT INTO curated.guide_citations
SELECT s.guide_id, s.para_no, s.ordinal, s.case_name, s.applicant, s.respondent, s.year, s.grand_chamber,
       s.is_decision, s.no_number, s.pinpoints, s.whole_case, s.signal, s.is_ibid, s.repeats_previous,
       s.raw_citation, s.itemid, s.resolution_method, s.linked_title, s.unresolved_reason, s.raw_sha256, now()
FROM staging.guide_citations s
WHERE NOT EXISTS (SELECT 1 FROM curated.guide_citations c WHERE c.guide_id = s.guide_id);
