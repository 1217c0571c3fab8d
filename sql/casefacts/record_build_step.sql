-- What one build step used: model, prompt template and its hash, number of requests.
INSERT INTO ops.casefacts_build_steps (run_id, step, model, template_id, template_sha, requests)
VALUES (?, ?, ?, ?, ?, ?);
