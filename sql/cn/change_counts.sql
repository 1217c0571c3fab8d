-- How the staged batch compares with curated: new, changed, unchanged.
SELECT
    count(*) FILTER (WHERE c.doc_id IS NULL)                                           AS new,
    count(*) FILTER (WHERE c.doc_id IS NOT NULL AND c.content_sha256 <> s.content_sha256) AS changed,
    count(*) FILTER (WHERE c.doc_id IS NOT NULL AND c.content_sha256 = s.content_sha256)  AS unchanged
FROM staging.cn_judgments s
LEFT JOIN curated.cn_judgments c USING (doc_id);
