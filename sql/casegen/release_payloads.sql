-- The archived payloads behind the released items (the cn dump files or API responses they were parsed from).
SELECT DISTINCT 'cn' AS source, j.raw_key AS key, j.raw_sha256 AS sha256
FROM curated.casegen_items i
JOIN curated.cn_judgments j ON j.doc_id = i.doc_id AND i.source = 'cn_judgments'
ORDER BY key, sha256;
