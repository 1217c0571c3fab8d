-- The keys the archive holds each of these contents under (one source; $sha256s a list): a batch's lookup.
SELECT sha256, key FROM ops.raw_payloads
WHERE source = $source AND sha256 IN (SELECT unnest($sha256s::VARCHAR[]));
