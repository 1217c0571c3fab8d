-- A payload is recorded as loaded together with what it quarantined (issue 36): a known problem is not parsed,
-- quarantined or failed again every night. `quarantined`: the records of it that are in ops.quarantine (parse
-- problems and rows the gate quarantined) as of its last parse; `problems_since`: the run that first quarantined
-- them; `suite`: the fingerprint of the gate's expectation suite it was checked against (a changed suite tries a
-- payload with quarantined records again).
ALTER TABLE ops.loaded_payloads ADD COLUMN IF NOT EXISTS quarantined BIGINT DEFAULT 0;
ALTER TABLE ops.loaded_payloads ADD COLUMN IF NOT EXISTS problems_since BIGINT;
ALTER TABLE ops.loaded_payloads ADD COLUMN IF NOT EXISTS suite VARCHAR;
