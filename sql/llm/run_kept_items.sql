-- Whether run $run exists, and the benchmark items it and the runs inside it kept: the `new` and `changed`
-- records of their builds (what the gates let into the benchmarks' tables).
SELECT count(*) FILTER (WHERE run_id = $run) AS found,
       coalesce(sum(coalesce(TRY_CAST(counts->>'new' AS BIGINT), 0)
                    + coalesce(TRY_CAST(counts->>'changed' AS BIGINT), 0)) FILTER (WHERE kind = 'build'), 0)::BIGINT
           AS kept
FROM ops.runs
WHERE run_id = $run OR parent_run_id = $run;
