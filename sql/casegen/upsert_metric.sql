-- Batch upsert of metric values from the registered relation _rows.
INSERT OR REPLACE INTO eval.casegen_metrics
SELECT item_id, model, task, metric, CAST(value AS DOUBLE), status, reason, run_id
FROM _rows;
