-- A nightly's stages in the order its plan runs them: by kind (? lists the kinds in that order: caseforge.flows.
-- nightly_plan.KINDS), then by name, as the summary and the Prefect timeline list them.
SELECT stage, name, status, counts, duration_s, message
FROM ops.nightly_stages
WHERE run_id = ?
ORDER BY coalesce(list_position(?::VARCHAR[], stage), 1000), name;
