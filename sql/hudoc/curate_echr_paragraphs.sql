-- A document's paragraphs are replaced as a whole when its body changed (never mixed versions).
DELETE FROM curated.echr_paragraphs
WHERE itemid IN (SELECT DISTINCT s.itemid FROM staging.echr_paragraphs s
                 WHERE NOT EXISTS (SELECT 1 FROM curated.echr_paragraphs c
                                   WHERE c.itemid = s.itemid AND c.raw_sha256 = s.raw_sha256));
INSERT INTO curated.echr_paragraphs
SELECT s.itemid, s.para_no, s.part, s.section, s.heading_path, s.text, s.ordinal, s.footnotes, s.source_format,
       s.raw_sha256, now()
FROM staging.echr_paragraphs s
WHERE NOT EXISTS (SELECT 1 FROM curated.echr_paragraphs c WHERE c.itemid = s.itemid);
