-- What the filters look at, for the judgments with no decision under this configuration yet or loaded again
-- since theirs (updated_at moved): a run decides only those, and reads no other judgment's text.
SELECT doc_id, source_format, simplified, complete, claims, defense, facts, reasoning, judgment,
       doc_type, case_type, updated_at
FROM curated.cn_judgments
WHERE doc_id IN (SELECT j.doc_id
                 FROM curated.cn_judgments j
                 LEFT JOIN curated.cn_filter_decisions d ON d.doc_id = j.doc_id AND d.filter_config = $filter_config
                 WHERE d.judgment_updated_at IS DISTINCT FROM j.updated_at)
ORDER BY doc_id;
