-- The latest run of each (system, llm, model, nli, dataset), one row per metric, for the report table.
WITH latest AS (
    SELECT * FROM eval.aquaechr_runs
    QUALIFY row_number() OVER (PARTITION BY system, llm, model, nli, dataset ORDER BY started_at DESC) = 1
)
SELECT l.run_id, l.system, l.llm, l.model, l.nli, l.bertscore_model, l.dataset, l.corpus, l.n_items, l.n_failed,
       m.metric, m.value, m.note
FROM latest l JOIN eval.aquaechr_metrics m USING (run_id)
ORDER BY l.dataset, l.system, l.model, m.metric;
