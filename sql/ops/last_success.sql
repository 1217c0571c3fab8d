-- What a nightly stage's last success recorded: the fingerprint of its inputs, the inputs themselves (JSON: per
-- table {rows, hash} and what else decided it; a replaying source's files) and the run that recorded them.
SELECT fingerprint, inputs, run_id FROM ops.input_fingerprints WHERE stage = ? AND name = ?;
