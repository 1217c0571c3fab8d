-- A guide's paragraphs are replaced as a whole when this parse made them otherwise than curated holds them (its
-- source changed, or a new parser makes other rows). A guide parsed again into the same rows (the resolver's
-- inputs changed, --reparse) is left as it is, updated_at included, so nothing that reads it sees a change.
DELETE FROM curated.guide_paragraphs
WHERE guide_id IN (
    SELECT guide_id FROM (
        (SELECT guide_id, para_no, heading_path, text, guide_version_date, pages, ordinal, raw_sha256
         FROM staging.guide_paragraphs
         EXCEPT ALL
         SELECT guide_id, para_no, heading_path, text, guide_version_date, pages, ordinal, raw_sha256
         FROM curated.guide_paragraphs
         WHERE guide_id IN (SELECT guide_id FROM staging.guide_paragraphs))
        UNION ALL
        (SELECT guide_id, para_no, heading_path, text, guide_version_date, pages, ordinal, raw_sha256
         FROM curated.guide_paragraphs
         WHERE guide_id IN (SELECT guide_id FROM staging.guide_paragraphs)
         EXCEPT ALL
         SELECT guide_id, para_no, heading_path, text, guide_version_date, pages, ordinal, raw_sha256
         FROM staging.guide_paragraphs)));
INSERT INTO curated.guide_paragraphs
SELECT s.guide_id, s.para_no, s.heading_path, s.text, s.guide_version_date, s.pages, s.ordinal, s.raw_sha256, now()
FROM staging.guide_paragraphs s
WHERE NOT EXISTS (SELECT 1 FROM curated.guide_paragraphs c WHERE c.guide_id = s.guide_id);
