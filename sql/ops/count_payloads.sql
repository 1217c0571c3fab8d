SELECT count(*) FROM ops.raw_payloads WHERE source = ?;
