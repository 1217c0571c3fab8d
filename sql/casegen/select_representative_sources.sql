-- Gold sections of the cluster representatives (curated.cn_representatives), in cluster order.
-- $limit caps the number of documents (NULL: all).
SELECT j.doc_id, j.case_name, j.court, j.case_type, j.cause,
       j.claims, j.defense, j.evidence, j.facts, j.reasoning, j.judgment
FROM curated.cn_judgments j
JOIN curated.cn_representatives r USING (doc_id)
WHERE j.complete AND NOT coalesce(j.simplified, false)
ORDER BY r.cluster, r.distance, j.doc_id
LIMIT coalesce($limit, 2147483647);
