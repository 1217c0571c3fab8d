-- For each candidate payload (_candidates: key, sha256) of one source: the records it gave when this parser
-- loaded it, NULL when it was not loaded by this parser or the rows of curated.{table} carrying its hash are
-- no longer the ones it left; how many rows there carry its hash now (a parse of it makes them again); and
-- what it quarantined then (records, the run that first did, what judged them: ParsedPayloads.checks).
WITH present AS (
    SELECT raw_sha256, count(*) AS n
    FROM curated.{table}
    WHERE raw_sha256 IN (SELECT sha256 FROM _candidates)
    GROUP BY raw_sha256
)
SELECT c.key, c.sha256,
       CASE WHEN l.rows = coalesce(p.n, 0) THEN l.records END AS records,
       coalesce(p.n, 0) AS present,
       coalesce(l.quarantined, 0) AS quarantined, l.problems_since, l.checks
FROM _candidates c
LEFT JOIN ops.loaded_payloads l
       ON l.source = $source AND l.key = c.key AND l.sha256 = c.sha256 AND l.parser = $parser
LEFT JOIN present p ON p.raw_sha256 = c.sha256;
