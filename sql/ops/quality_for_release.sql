-- The gate's results per table over the batches of the run that last validated it (as ops/latest_quality.sql),
-- without timestamps or run ids (release cards must not change with time).
WITH results AS (
    SELECT *, first_value(run_id) OVER (PARTITION BY table_name ORDER BY validated_at DESC) AS last_run
    FROM ops.quality_results
    WHERE list_contains(?::VARCHAR[], table_name)
)
SELECT table_name, arg_max(suite, validated_at) AS suite, bool_and(success) AS success,
       sum(rows_checked)::BIGINT AS rows_checked, sum(rows_failed)::BIGINT AS rows_failed,
       bool_or(batch_rejected) AS batch_rejected, count(*) AS batches
FROM results
WHERE run_id IS NOT DISTINCT FROM last_run
GROUP BY table_name, last_run
ORDER BY table_name;
