-- Kept documents of one filter configuration with the text the embedder reads.
SELECT j.doc_id, j.claims, j.defense, j.facts, j.reasoning, j.judgment, j.full_text
FROM curated.cn_filter_decisions d
JOIN curated.cn_judgments j USING (doc_id)
WHERE d.filter_config = $filter_config AND d.kept
ORDER BY j.doc_id;
