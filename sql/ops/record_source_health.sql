-- One source's health on one night (ops.source_health); a nightly run records each source once.
INSERT INTO ops.source_health (run_id, source, night_at, source_status, listed, fetched, parsed, loaded, quarantined,
                               new, changed, yield_name, yield_value, yield_basis, health, broken)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);
