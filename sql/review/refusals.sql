SELECT annotation_id, item_id, task_id, completed_by, updated_by, reason FROM review.refusals
WHERE benchmark = $benchmark ORDER BY annotation_id;
