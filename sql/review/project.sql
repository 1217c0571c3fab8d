SELECT project_id, view_sha, overlap FROM review.projects WHERE benchmark = $benchmark AND server = $server;
