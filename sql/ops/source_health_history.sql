-- The nights of one source before this run, newest first (caseforge/source_health.py compares tonight with them).
SELECT night_at, listed, new, yield_value, health
FROM ops.source_health
WHERE source = ? AND run_id < ?
ORDER BY night_at DESC, run_id DESC
LIMIT ?;
