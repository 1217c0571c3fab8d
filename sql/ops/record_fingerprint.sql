INSERT OR REPLACE INTO ops.input_fingerprints (stage, name, fingerprint, inputs, run_id, recorded_at)
VALUES (?, ?, ?, ?, ?, ?);
