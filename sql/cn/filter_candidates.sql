-- What the filters look at, for every curated judgment (or those of one source format).
SELECT doc_id, source_format, simplified, complete, claims, defense, facts, reasoning, judgment,
       doc_type, case_type
FROM curated.cn_judgments
WHERE $source_format IS NULL OR source_format = $source_format
ORDER BY doc_id;
