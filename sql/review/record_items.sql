-- Items pushed (or found already pushed) to a project; _rows: item_id, ref, project_id, task_id, stratum, judge.
INSERT OR REPLACE INTO review.items (benchmark, item_id, ref, project_id, task_id, stratum, judge)
SELECT benchmark, item_id, ref, project_id, task_id, stratum, CAST(judge AS JSON) FROM _rows;
