-- What the judge card is computed from: per pushed item, the judge's verdict and every accepted answer.
SELECT i.item_id, i.judge, a.annotation_id, a.annotator, a.field, a.value
FROM review.items i
LEFT JOIN review.annotations a ON a.benchmark = i.benchmark AND a.item_id = i.item_id
WHERE i.benchmark = $benchmark
ORDER BY i.item_id, a.annotation_id, a.field;
