-- For each candidate quarantine row (_quarantine: position, table_name, source_key, stage, reason, raw_sha256)
-- whether ops.quarantine already holds its identity (table, payload, record, stage, reason), and the run that
-- first quarantined it: a known problem is not quarantined again.
SELECT c.position, count(q.table_name) > 0 AS known, min(q.run_id) AS since
FROM _quarantine c
LEFT JOIN ops.quarantine q
       ON q.raw_sha256 = c.raw_sha256 AND q.table_name = c.table_name AND q.stage = c.stage
      AND q.reason = c.reason AND q.source_key IS NOT DISTINCT FROM c.source_key
GROUP BY c.position;
