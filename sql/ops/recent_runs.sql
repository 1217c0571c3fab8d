-- The latest runs, newest first, with how many stages of a nightly failed or were skipped, and the
-- process that owns each (to tell a live `running` run from one whose process is gone).
SELECT r.run_id, r.kind, r.target, r.status, r.started_at, r.finished_at,
       date_diff('microsecond', r.started_at, r.finished_at) / 1e6 AS duration_s,
       r.counts, r.message,
       count(s.name) FILTER (WHERE s.status IN ('failed', 'quarantined')) AS stages_failed,
       count(s.name) FILTER (WHERE s.status = 'skipped') AS stages_skipped,
       r.pid, r.host, r.process_start
FROM ops.runs AS r
LEFT JOIN ops.nightly_stages AS s USING (run_id)
GROUP BY ALL
ORDER BY r.run_id DESC
LIMIT ?;
