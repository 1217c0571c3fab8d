-- Gold sections of the documents to build CaseGen items from: the cluster representatives when
-- curated.cn_representatives exists ($with_representatives), otherwise every complete judgment.
-- $limit caps the number of documents (NULL: all).
SELECT j.doc_id, j.case_name, j.court, j.case_type, j.cause,
       j.claims, j.defense, j.evidence, j.facts, j.reasoning, j.judgment
FROM curated.cn_judgments j
WHERE j.complete
  AND NOT coalesce(j.simplified, false)
  AND ($with_representatives = false
       OR j.doc_id IN (SELECT doc_id FROM curated.cn_representatives))
ORDER BY j.doc_id
LIMIT coalesce($limit, 2147483647);
