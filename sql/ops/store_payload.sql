-- Archive a payload once per (source, key, content); a concurrent duplicate is a no-op.
INSERT INTO ops.raw_payloads (source, key, sha256, url, fetched_at, http_status, content_type, body)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING;
