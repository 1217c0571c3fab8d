-- A guide's citations are replaced as a whole (resolution may improve as judgments arrive).
DELETE FROM curated.guide_citations WHERE guide_id IN (SELECT DISTINCT guide_id FROM staging.guide_citations);
INSERT INTO curated.guide_citations
SELECT s.guide_id, s.para_no, s.ordinal, s.case_name, s.applicant, s.respondent, s.year, s.grand_chamber,
       s.is_decision, s.no_number, s.pinpoints, s.whole_case, s.signal, s.is_ibid, s.repeats_previous,
       s.raw_citation, s.itemid, s.resolution_method, s.linked_title, s.unresolved_reason, s.raw_sha256, now()
FROM staging.guide_citations s;
