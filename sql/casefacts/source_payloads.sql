-- Raw payload hashes of the cases behind the dataset's evidence.
SELECT s.case_id, s.name, s.raw_sha256
FROM curated.scotus_cases s
WHERE s.case_id IN (SELECT DISTINCT CAST(unnest(CAST(evidence_case_ids AS BIGINT[])) AS BIGINT)
                    FROM curated.casefacts_claims)
ORDER BY s.case_id;
