-- Metrics of the most recently finished run of a system and model.
WITH latest AS (
    SELECT run_id FROM eval.aquaechr_runs WHERE system = $system AND model = $model
    ORDER BY finished_at DESC LIMIT 1
)
SELECT m.metric, m.value, m.note FROM eval.aquaechr_metrics m JOIN latest USING (run_id) ORDER BY m.metric;
