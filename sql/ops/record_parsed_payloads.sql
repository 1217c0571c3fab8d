-- Payloads (_loaded: key, sha256, records) whose every row passed the gate and is in curated.{table}:
-- recorded with the rows there carrying their hash, so a later run can tell they are still intact.
INSERT OR REPLACE INTO ops.loaded_payloads (source, key, sha256, parser, records, rows, run_id, loaded_at)
SELECT $source, l.key, l.sha256, $parser, l.records, coalesce(p.n, 0), $run_id, now()
FROM _loaded l
LEFT JOIN (SELECT raw_sha256, count(*) AS n FROM curated.{table}
           WHERE raw_sha256 IN (SELECT sha256 FROM _loaded) GROUP BY raw_sha256) p ON p.raw_sha256 = l.sha256;
