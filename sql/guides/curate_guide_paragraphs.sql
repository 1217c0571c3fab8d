-- A guide's paragraphs are replaced as a whole when its source changed.
DELETE FROM curated.guide_paragraphs
WHERE guide_id IN (SELECT DISTINCT s.guide_id FROM staging.guide_paragraphs s
                   WHERE NOT EXISTS (SELECT 1 FROM curated.guide_paragraphs c
                                     WHERE c.guide_id = s.guide_id AND c.raw_sha256 = s.raw_sha256));
INSERT INTO curated.guide_paragraphs
SELECT s.guide_id, s.para_no, s.heading_path, s.text, s.guide_version_date, s.pages, s.ordinal, s.raw_sha256, now()
FROM staging.guide_paragraphs s
WHERE NOT EXISTS (SELECT 1 FROM curated.guide_paragraphs c WHERE c.guide_id = s.guide_id);
