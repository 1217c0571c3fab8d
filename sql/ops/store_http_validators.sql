-- Remember a URL's ETag / Last-Modified (and the body's hash) for the next conditional GET.
INSERT OR REPLACE INTO ops.http_validators (url, etag, last_modified, sha256, checked_at)
VALUES (?, ?, ?, ?, ?);
