-- Archive a batch of payloads (_payloads: source, key, sha256, url, fetched_at, http_status, content_type,
-- body) in one statement, each once per (source, key, content): those the archive holds are not written again.
INSERT INTO ops.raw_payloads (source, key, sha256, url, fetched_at, http_status, content_type, body)
SELECT p.source, p.key, p.sha256, p.url, p.fetched_at, p.http_status, p.content_type, p.body
FROM _payloads p
WHERE NOT EXISTS (SELECT 1 FROM ops.raw_payloads r
                  WHERE r.source = p.source AND r.key = p.key AND r.sha256 = p.sha256);
