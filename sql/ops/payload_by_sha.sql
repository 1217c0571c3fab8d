-- An archived payload by its content hash (any source or key that stored it).
SELECT source, key, url, http_status, content_type, body, sha256, fetched_at
FROM ops.raw_payloads
WHERE sha256 = ?
LIMIT 1;
