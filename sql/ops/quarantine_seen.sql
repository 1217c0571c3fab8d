-- What this connection's runs quarantined, known or new, per payload: a temporary table the ledger reads when it
-- records a payload (caseforge.archive.ParsedPayloads.settle). It is not ops.quarantine, which is append-only
-- (the mirror copies it by its stamp) and keeps each identity once.
CREATE TEMP TABLE IF NOT EXISTS quarantine_seen (run_id BIGINT, raw_sha256 VARCHAR, since BIGINT);
