-- Gold sections of every complete, ordinary-procedure judgment (when no representatives were selected).
-- $limit caps the number of documents (NULL: all).
SELECT j.doc_id, j.case_name, j.court, j.case_type, j.cause,
       j.claims, j.defense, j.evidence, j.facts, j.reasoning, j.judgment
FROM curated.cn_judgments j
WHERE j.complete AND j.simplified IS NULL
ORDER BY j.doc_id
LIMIT coalesce($limit, 2147483647);
