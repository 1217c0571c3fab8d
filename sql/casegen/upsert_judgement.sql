-- Batch upsert of judge scores from the registered relation _rows.
INSERT OR REPLACE INTO eval.casegen_judgements
SELECT item_id, model, judge_model, task, dimension, CAST(score AS DOUBLE), status, reason, reply_format,
       request_identity, run_id, now()
FROM _rows;
