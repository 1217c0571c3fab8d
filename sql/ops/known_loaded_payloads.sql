-- Of the payloads just recorded (_loaded: key, sha256, records): how many hold a problem this run found again
-- that an earlier run quarantined (temp.quarantine_seen; a known problem found by a re-parse).
SELECT count(DISTINCT raw_sha256)
FROM temp.quarantine_seen
WHERE run_id IS NOT DISTINCT FROM $run_id AND since IS DISTINCT FROM run_id
  AND raw_sha256 IN (SELECT sha256 FROM _loaded);
