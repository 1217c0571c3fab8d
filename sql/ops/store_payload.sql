-- Archive a payload once per (source, key, content): nothing is written when the archive already holds it (the
-- table has no index, migration 130; this statement is what keeps the triple unique).
INSERT INTO ops.raw_payloads (source, key, sha256, url, fetched_at, http_status, content_type, body)
SELECT $source, $key, $sha256, $url, $fetched_at, $http_status, $content_type, $body
WHERE NOT EXISTS (SELECT 1 FROM ops.raw_payloads
                  WHERE source = $source AND key = $key AND sha256 = $sha256);
