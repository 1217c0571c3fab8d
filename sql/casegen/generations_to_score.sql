-- Successful generations of the given models with their items' references.
SELECT g.item_id, g.model, g.task, g.output_text, i.reference, i.inputs
FROM eval.casegen_generations g
JOIN curated.casegen_items i USING (item_id)
WHERE g.status = 'ok' AND list_contains($models, g.model)
ORDER BY g.task, g.item_id, g.model;
