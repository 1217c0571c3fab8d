-- The latest gate result per table (optionally one table).
SELECT table_name, suite, validated_at, success, rows_checked, rows_failed, batch_rejected,
       failed_expectations
FROM ops.quality_results
WHERE ($1 IS NULL OR table_name = $2)
QUALIFY row_number() OVER (PARTITION BY table_name ORDER BY validated_at DESC) = 1
ORDER BY table_name;
