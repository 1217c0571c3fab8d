-- The final dataset with evidence case names (for readers) next to the ids, and each claim's provenance:
-- the newest decision date among its evidence cases (source_date, what the fresh split is cut on), the archived
-- payloads of those cases, and the build step that wrote the claim's text with that step's model and prompt hash
-- (latest build). Text stage: a REFUTED claim (~neg) is the rewrite of a negation; a same-case correction keeps
-- the text the resolution step wrote; a claim whose text differs from the kept claim's was merged from overlaps;
-- any other claim is the generator's text.
WITH steps AS (
    SELECT step, string_agg(DISTINCT model, '; ' ORDER BY model) AS model,
           string_agg(DISTINCT template_sha, '; ' ORDER BY template_sha) AS prompt_sha256
    FROM ops.casefacts_build_steps
    WHERE run_id IS NOT DISTINCT FROM (SELECT max(run_id) FROM ops.casefacts_build_steps)
    GROUP BY step
),
staged AS (
    SELECT c.*,
           CASE WHEN c.claim_id LIKE '%~neg' THEN 'rewrite'
                WHEN k.origin = 'merged_correction' AND k.claim = c.claim THEN 'same_case_resolution'
                WHEN k.claim IS NOT NULL AND k.claim <> c.claim THEN 'overlap_merge'
                ELSE 'generate' END AS claim_stage
    FROM curated.casefacts_claims c
    LEFT JOIN build.casefacts_kept_claims k ON k.claim_id = c.claim_id
)
SELECT c.claim_id, c.fact_id, c.claim, c.label, c.split,
       CAST(c.evidence_case_ids AS BIGINT[]) AS evidence_case_ids,
       CAST(c.overruling_case_ids AS BIGINT[]) AS overruling_case_ids,
       (SELECT list(s.name ORDER BY s.name) FROM curated.scotus_cases s
        WHERE list_contains(CAST(c.evidence_case_ids AS BIGINT[]), s.case_id)) AS evidence_case_names,
       (SELECT list(s.name ORDER BY s.name) FROM curated.scotus_cases s
        WHERE list_contains(CAST(c.overruling_case_ids AS BIGINT[]), s.case_id)) AS overruling_case_names,
       (SELECT max(s.decided_date) FROM curated.scotus_cases s
        WHERE list_contains(CAST(c.evidence_case_ids AS BIGINT[]), s.case_id)) AS source_date,
       (SELECT list(s.raw_sha256 ORDER BY s.case_id) FROM curated.scotus_cases s
        WHERE list_contains(CAST(c.evidence_case_ids AS BIGINT[]), s.case_id)) AS source_payload_sha256,
       c.claim_stage, st.model, st.prompt_sha256
FROM staged c
LEFT JOIN steps st ON st.step = c.claim_stage
ORDER BY c.split, c.claim_id;
