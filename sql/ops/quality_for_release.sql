-- The latest gate result per table, without its timestamp (release cards must not change with time).
SELECT table_name, suite, success, rows_checked, rows_failed, batch_rejected
FROM ops.quality_results
WHERE list_contains(?::VARCHAR[], table_name)
QUALIFY row_number() OVER (PARTITION BY table_name ORDER BY validated_at DESC) = 1
ORDER BY table_name;
