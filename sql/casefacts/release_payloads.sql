-- The archived Oyez payloads behind the cases the dataset's claims cite as evidence.
SELECT DISTINCT p.source, p.key, p.sha256
FROM ops.raw_payloads AS p
JOIN curated.scotus_cases AS s ON s.raw_sha256 = p.sha256
WHERE p.source = 'oyez'
  AND s.case_id IN (SELECT DISTINCT CAST(unnest(CAST(evidence_case_ids AS BIGINT[])) AS BIGINT)
                    FROM curated.casefacts_claims)
ORDER BY 1, 2, 3;
