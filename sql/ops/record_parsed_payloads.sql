-- Payloads (_loaded: key, sha256, records) parsed and gated by this run whose batch was not rejected: recorded
-- with the rows of curated.{table} carrying their hash (so a later run can tell they are still intact) and what
-- this run quarantined of them (temp.quarantine_seen: records, and the run that first quarantined them). Their
-- keys' earlier rows were deleted just before (ops/forget_parsed_payloads.sql): one row per (source, key).
INSERT INTO ops.loaded_payloads
    (source, key, sha256, parser, records, rows, run_id, loaded_at, quarantined, problems_since, checks)
SELECT $source, l.key, l.sha256, $parser, l.records, coalesce(p.n, 0), $run_id, now(),
       coalesce(s.n, 0), s.since, $checks
FROM _loaded l
LEFT JOIN (SELECT raw_sha256, count(*) AS n FROM curated.{table}
           WHERE raw_sha256 IN (SELECT sha256 FROM _loaded) GROUP BY raw_sha256) p ON p.raw_sha256 = l.sha256
LEFT JOIN (SELECT raw_sha256, count(*) AS n, min(since) AS since FROM temp.quarantine_seen
           WHERE run_id IS NOT DISTINCT FROM $run_id AND raw_sha256 IN (SELECT sha256 FROM _loaded)
           GROUP BY raw_sha256) s ON s.raw_sha256 = l.sha256;
