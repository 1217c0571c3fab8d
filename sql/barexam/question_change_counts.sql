-- How the staged questions compare with curated: new, changed, unchanged.
SELECT
    count(*) FILTER (WHERE c.question_id IS NULL)                                      AS new,
    count(*) FILTER (WHERE c.question_id IS NOT NULL AND c.raw_sha256 <> s.raw_sha256) AS changed,
    count(*) FILTER (WHERE c.question_id IS NOT NULL AND c.raw_sha256 = s.raw_sha256)  AS unchanged
FROM staging.barexam_questions s
LEFT JOIN curated.barexam_questions c USING (question_id);
