-- The archived upstream payloads behind the released cases.
SELECT DISTINCT p.source, p.key, p.sha256
FROM ops.raw_payloads AS p
JOIN curated.scotus_cases AS c ON c.raw_sha256 = p.sha256
WHERE p.source = 'oyez'
ORDER BY 1, 2, 3;
