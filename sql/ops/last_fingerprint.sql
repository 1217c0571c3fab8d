SELECT fingerprint FROM ops.input_fingerprints WHERE stage = ? AND name = ?;
