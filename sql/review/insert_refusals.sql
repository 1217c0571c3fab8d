INSERT INTO review.refusals (benchmark, item_id, task_id, annotation_id, completed_by, updated_by, reason)
SELECT benchmark, item_id, task_id, annotation_id, completed_by, updated_by, reason FROM _rows;
