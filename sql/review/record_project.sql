INSERT OR REPLACE INTO review.projects (benchmark, server, project_id, view_sha, overlap)
VALUES ($benchmark, $server, $project_id, $view_sha, $overlap);
