-- The archived guide payloads behind the released pairs.
SELECT DISTINCT p.source, p.key, p.sha256
FROM ops.raw_payloads AS p
JOIN curated.guide_paragraphs AS g ON g.raw_sha256 = p.sha256
WHERE g.guide_id IN (SELECT guide_id FROM curated.aquaechr_qa WHERE kept)
ORDER BY 1, 2, 3;
