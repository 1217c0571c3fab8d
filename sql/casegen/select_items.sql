-- Items to evaluate: optionally one task ($task NULL: all), capped at $limit per task.
SELECT item_id, doc_id, task, inputs, reference, source, content_sha256
FROM (
    SELECT *, row_number() OVER (PARTITION BY task ORDER BY doc_id, item_id) AS n
    FROM curated.casegen_items
    WHERE $task IS NULL OR task = $task
)
WHERE n <= coalesce($limit, 2147483647)
ORDER BY task, doc_id, item_id;
