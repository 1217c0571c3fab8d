-- One gate validation, kept whether it passed or not.
INSERT INTO ops.quality_results (run_id, table_name, suite, validated_at, success, rows_checked, rows_failed,
                                 batch_rejected, failed_expectations, result)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);
