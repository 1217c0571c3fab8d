-- One evaluation store for every benchmark: eval.runs, eval.item_outputs and eval.metrics. The AQuAECHR
-- evaluation had tables of its own (eval.aquaechr_*); their rows move here and the tables go.
ALTER TABLE eval.runs ADD COLUMN IF NOT EXISTS backend VARCHAR;     -- LLM backend of the evaluated system, if any
ALTER TABLE eval.runs ADD COLUMN IF NOT EXISTS model VARCHAR;       -- model of the evaluated system, if any
ALTER TABLE eval.metrics ADD COLUMN IF NOT EXISTS note VARCHAR;     -- why a value is missing or how it was made

INSERT OR REPLACE INTO eval.runs (eval_run_id, task, system, dataset, dataset_sha, params, n_items, n_failed,
                                  started_at, finished_at, backend, model)
SELECT run_id, 'aquaechr', system, dataset, dataset_sha,
       json_merge_patch(params, json_object('llm', llm, 'model', model, 'nli', nli,
                                            'bertscore_model', bertscore_model, 'corpus', corpus)),
       n_items, n_failed, started_at, finished_at, llm, model
FROM eval.aquaechr_runs;

INSERT OR REPLACE INTO eval.item_outputs (eval_run_id, item_id, gold, predicted, scores, status, reason)
SELECT run_id, item_id, json_object('question', question, 'citations', gold_citations),
       json_object('answer', answer, 'shown', shown, 'citations', citations, 'sentences', sentences),
       scores, status, reason
FROM eval.aquaechr_outputs;

INSERT OR REPLACE INTO eval.metrics (eval_run_id, metric, value, note)
SELECT run_id, metric, value, note FROM eval.aquaechr_metrics;

DROP TABLE eval.aquaechr_outputs;
DROP TABLE eval.aquaechr_metrics;
DROP TABLE eval.aquaechr_runs;
