SELECT annotation_id, item_id, task_id, annotator, field, value, updated_at FROM review.annotations
WHERE benchmark = $benchmark ORDER BY annotation_id, field;
