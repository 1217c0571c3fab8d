-- How the staged passages compare with curated: new, changed, unchanged.
SELECT
    count(*) FILTER (WHERE c.passage_id IS NULL)                                      AS new,
    count(*) FILTER (WHERE c.passage_id IS NOT NULL AND c.raw_sha256 <> s.raw_sha256) AS changed,
    count(*) FILTER (WHERE c.passage_id IS NOT NULL AND c.raw_sha256 = s.raw_sha256)  AS unchanged
FROM staging.barexam_passages s
LEFT JOIN curated.barexam_passages c USING (passage_id);
