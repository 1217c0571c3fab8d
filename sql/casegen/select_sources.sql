-- Gold sections of every complete, ordinary-procedure judgment (no representatives table yet).
-- $limit caps the number of documents (NULL: all).
SELECT j.doc_id, j.case_name, j.court, j.case_type, j.cause,
       j.claims, j.defense, j.evidence, j.facts, j.reasoning, j.judgment
FROM curated.cn_judgments j
WHERE j.complete AND NOT coalesce(j.simplified, false)
ORDER BY j.doc_id
LIMIT coalesce($limit, 2147483647);
