-- Quarantined records of this run (_seen: run_id, raw_sha256, since), known or new (ops/quarantine_seen.sql).
INSERT INTO temp.quarantine_seen SELECT run_id, raw_sha256, since FROM _seen;
