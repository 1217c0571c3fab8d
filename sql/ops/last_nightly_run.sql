-- The newest nightly's run id (NULL when none ran), however many runs came after it.
SELECT max(run_id) FROM ops.runs WHERE kind = 'nightly';
