-- A payload is recorded as loaded together with what it quarantined (issue 36): a known problem is not parsed,
-- quarantined or failed again every night. `quarantined`: the records of it that are in ops.quarantine (parse
-- problems and rows the gate quarantined) as of its last parse; `problems_since`: the run that first quarantined
-- them; `checks`: a fingerprint of what judged them (the gate's expectation suites and the parse limits): when it
-- changes, a payload with quarantined records is tried again.
ALTER TABLE ops.loaded_payloads ADD COLUMN IF NOT EXISTS quarantined BIGINT DEFAULT 0;
ALTER TABLE ops.loaded_payloads ADD COLUMN IF NOT EXISTS problems_since BIGINT;
ALTER TABLE ops.loaded_payloads ADD COLUMN IF NOT EXISTS checks VARCHAR;
