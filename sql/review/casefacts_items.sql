-- CaseFacts claims as review items: what the annotator sees (the claim; the facts, question and conclusion of
-- its evidence cases, oldest first), the judge's verdict (the claim's label, hidden from the annotator) and the
-- stratum (label, source year: the newest decision date among its evidence cases).
WITH cases AS (
    SELECT c.claim_id,
           string_agg(s.name || ' (decided ' || coalesce(CAST(s.decided_date AS VARCHAR), 'undated') || ')' ||
                      chr(10) || 'Facts: ' || coalesce(s.facts, '') || chr(10) || 'Question: ' ||
                      coalesce(s.question, '') || chr(10) || 'Conclusion: ' || coalesce(s.conclusion, ''),
                      chr(10) || chr(10) ORDER BY s.decided_date, s.case_id) AS cases,
           max(s.decided_date) AS source_date
    FROM curated.casefacts_claims c
    JOIN curated.scotus_cases s ON list_contains(CAST(c.evidence_case_ids AS BIGINT[]), s.case_id)
    GROUP BY c.claim_id
)
SELECT c.claim_id AS item_id, c.label, '' AS band, year(k.source_date) AS year,
       json_object('verdict', c.label) AS judge,
       json_object('claim', c.claim, 'cases', coalesce(k.cases, '')) AS data
FROM curated.casefacts_claims c
LEFT JOIN cases k ON k.claim_id = c.claim_id
ORDER BY c.claim_id;
