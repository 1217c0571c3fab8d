-- How the staged guide paragraphs compare with curated: new, changed (another version of the guide), unchanged.
SELECT
    count(*) FILTER (WHERE c.guide_id IS NULL)                                      AS new,
    count(*) FILTER (WHERE c.guide_id IS NOT NULL AND c.raw_sha256 <> s.raw_sha256) AS changed,
    count(*) FILTER (WHERE c.guide_id IS NOT NULL AND c.raw_sha256 = s.raw_sha256)  AS unchanged
FROM staging.guide_paragraphs s
LEFT JOIN curated.guide_paragraphs c USING (guide_id, para_no);
