-- Whether the archive already holds this content for this (source, key).
SELECT count(*) FROM ops.raw_payloads WHERE source = ? AND key = ? AND sha256 = ?;
