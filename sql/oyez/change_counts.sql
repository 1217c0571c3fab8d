-- How the staged batch compares with curated: new, changed, unchanged.
SELECT
    count(*) FILTER (WHERE c.case_id IS NULL)                                   AS new,
    count(*) FILTER (WHERE c.case_id IS NOT NULL AND c.raw_sha256 <> s.raw_sha256) AS changed,
    count(*) FILTER (WHERE c.case_id IS NOT NULL AND c.raw_sha256 = s.raw_sha256)  AS unchanged
FROM staging.scotus_cases s
LEFT JOIN curated.scotus_cases c USING (case_id);
