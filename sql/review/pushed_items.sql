-- The items of a benchmark pushed to a project, with the judge's verdict.
SELECT item_id, ref, task_id, stratum, judge FROM review.items
WHERE benchmark = $benchmark AND project_id = $project_id ORDER BY item_id;
