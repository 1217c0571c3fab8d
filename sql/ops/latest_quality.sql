-- The gate's results per table (optionally one table) over all the batches that make up its current data:
-- the batches of the run that last validated it. Rows are summed over those batches; success only when
-- every one of them succeeded; failed_expectations of every batch that failed.
WITH results AS (
    SELECT *, first_value(run_id) OVER (PARTITION BY table_name ORDER BY validated_at DESC) AS last_run
    FROM ops.quality_results
    WHERE ($1 IS NULL OR table_name = $2)
)
SELECT table_name, arg_max(suite, validated_at) AS suite, max(validated_at) AS validated_at,
       bool_and(success) AS success, sum(rows_checked)::BIGINT AS rows_checked,
       sum(rows_failed)::BIGINT AS rows_failed, bool_or(batch_rejected) AS batch_rejected,
       count(*) AS batches, last_run AS run_id,
       to_json(list(failed_expectations ORDER BY validated_at) FILTER (WHERE NOT success)) AS failed_expectations
FROM results
WHERE run_id IS NOT DISTINCT FROM last_run
GROUP BY table_name, last_run
ORDER BY table_name;
