-- How the staged judgment paragraphs compare with curated: new, changed (another body), unchanged.
SELECT
    count(*) FILTER (WHERE c.itemid IS NULL)                                      AS new,
    count(*) FILTER (WHERE c.itemid IS NOT NULL AND c.raw_sha256 <> s.raw_sha256) AS changed,
    count(*) FILTER (WHERE c.itemid IS NOT NULL AND c.raw_sha256 = s.raw_sha256)  AS unchanged
FROM staging.echr_paragraphs s
LEFT JOIN curated.echr_paragraphs c USING (itemid, ordinal);
