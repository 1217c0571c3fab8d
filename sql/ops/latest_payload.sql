-- The newest archived payload for a (source, key).
SELECT source, key, url, http_status, content_type, body, sha256, fetched_at
FROM ops.raw_payloads
WHERE source = ? AND key = ?
ORDER BY fetched_at DESC
LIMIT 1;
