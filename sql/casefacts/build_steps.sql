-- Models and prompt hashes per step of the latest build (runs outside a flow have no run id).
SELECT step AS stage, model, template_id, template_sha, sum(requests) AS requests
FROM ops.casefacts_build_steps
WHERE run_id IS NOT DISTINCT FROM (SELECT max(run_id) FROM ops.casefacts_build_steps)
GROUP BY ALL
ORDER BY stage, model;
