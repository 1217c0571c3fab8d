INSERT INTO review.annotations (benchmark, item_id, task_id, annotation_id, annotator, field, value, updated_at)
SELECT benchmark, item_id, task_id, annotation_id, annotator, field, value, updated_at FROM _rows;
