-- Gold sections of the representatives of the latest selection (curated.cn_representatives), in cluster order.
-- $limit caps the number of documents (NULL: all).
WITH latest AS (
    SELECT selection FROM curated.cn_representatives ORDER BY selected_at DESC, selection LIMIT 1
)
SELECT j.doc_id, j.case_name, j.court, j.case_type, j.cause,
       j.claims, j.defense, j.evidence, j.facts, j.reasoning, j.judgment
FROM curated.cn_judgments j
JOIN curated.cn_representatives r USING (doc_id)
JOIN latest USING (selection)
WHERE j.complete AND j.simplified IS NULL
ORDER BY r.cluster, r.distance, j.doc_id
LIMIT coalesce($limit, 2147483647);
