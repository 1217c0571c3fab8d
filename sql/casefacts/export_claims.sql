-- The final dataset with evidence case names (for readers) next to the ids.
SELECT c.claim_id, c.fact_id, c.claim, c.label, c.split,
       c.evidence_case_ids, c.overruling_case_ids,
       (SELECT list(s.name ORDER BY s.name) FROM curated.scotus_cases s
        WHERE list_contains(CAST(c.evidence_case_ids AS BIGINT[]), s.case_id)) AS evidence_case_names,
       (SELECT list(s.name ORDER BY s.name) FROM curated.scotus_cases s
        WHERE list_contains(CAST(c.overruling_case_ids AS BIGINT[]), s.case_id)) AS overruling_case_names
FROM curated.casefacts_claims c
ORDER BY c.split, c.claim_id;
