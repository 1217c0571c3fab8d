-- CaseGen's evaluation writes the one evaluation store (eval.runs, eval.item_outputs, eval.metrics), one run per
-- evaluated model and configuration (tasks/casegen/eval/store.py). Its own tables were keyed by (item, model)
-- only, so a run with other settings overwrote the last one; their rows move to the store here and the tables go.
--
-- The old tables never recorded the settings a row was made with (input budget, output budget, task filter,
-- limit, BERTScore model), so each (evaluated model, judge model) becomes one run whose params say only what is
-- known: {"judge_model", "llm" (the generation backend, null when the items had several; each item keeps its
-- own in predicted.backend), "migrated_from"}. A model without judge scores gets one run with judge_model null.
-- The run id is caseforge.evalstore.eval_run_id's hash of the canonical JSON of task, system, dataset_sha and
-- params (keys in sorted order, no spaces), so for ASCII names it is exactly what that function gives for the
-- stored row; the dataset_sha is store.dataset_sha's (item_id TAB content_sha256, one per line, by item id).
-- Items and metrics get the shapes and names tasks/casegen/eval/store.py writes: gold (task and the reference's
-- identity), predicted (draft, request identity, input cut, judge reading), scores (judge_<dimension> and the
-- reference metrics), status/reason (a failed generation is a failed item), and the means and counts over all
-- tasks and per task (`<name>/<task>`). Nothing is dropped: an (item, model) known to any of the three tables
-- becomes an item of its model's run(s), a failed one with the reason when no generation was recorded.

-- every (item, evaluated model) any old table knows, with its task
CREATE TEMP TABLE _casegen_keys AS
SELECT item_id, model, any_value(task) AS task
FROM (SELECT item_id, model, task FROM eval.casegen_generations
      UNION ALL SELECT item_id, model, task FROM eval.casegen_judgements
      UNION ALL SELECT item_id, model, task FROM eval.casegen_metrics)
GROUP BY item_id, model;

-- one run per (evaluated model, judge model)
CREATE TEMP TABLE _casegen_runs AS
WITH pairs AS (
    SELECT DISTINCT k.model, j.judge_model
    FROM _casegen_keys k
    LEFT JOIN (SELECT DISTINCT model, judge_model FROM eval.casegen_judgements) j USING (model)
),
generated AS (
    SELECT model, CASE WHEN count(DISTINCT backend) = 1 THEN min(backend) END AS backend,
           min(created_at) AS first_at, max(created_at) AS last_at
    FROM eval.casegen_generations GROUP BY model
),
judged AS (
    SELECT model, judge_model, min(created_at) AS first_at, max(created_at) AS last_at
    FROM eval.casegen_judgements GROUP BY model, judge_model
),
datasets AS (
    SELECT k.model,
           sha256(string_agg(k.item_id || chr(9) || coalesce(i.content_sha256, ''), chr(10) ORDER BY k.item_id))
               AS dataset_sha
    FROM _casegen_keys k LEFT JOIN curated.casegen_items i USING (item_id)
    GROUP BY k.model
),
described AS (
    SELECT p.model, p.judge_model, g.backend, d.dataset_sha,
           json_object('judge_model', p.judge_model, 'llm', g.backend,
                       'migrated_from', 'eval.casegen_generations, eval.casegen_judgements, eval.casegen_metrics '
                                        '(migration 112; settings were not recorded)') AS params,
           coalesce(least(g.first_at, j.first_at), now()) AS started_at,
           coalesce(greatest(g.last_at, j.last_at), now()) AS finished_at
    FROM pairs p
    JOIN datasets d USING (model)
    LEFT JOIN generated g USING (model)
    LEFT JOIN judged j ON j.model = p.model AND j.judge_model = p.judge_model
)
SELECT substr(sha256(json_object('dataset', dataset_sha, 'params', params, 'system', model,
                                 'task', 'casegen')::VARCHAR), 1, 16) AS eval_run_id, *
FROM described;

-- the judge's reading of one draft: a failed call (status judge_failed) or its dimensions
CREATE TEMP TABLE _casegen_judged AS
SELECT j.item_id, j.model, j.judge_model, any_value(j.request_identity) AS request_identity,
       any_value(j.reply_format) AS reply_format, bool_or(j.status = 'judge_failed') AS failed,
       max(j.reason) FILTER (WHERE j.status = 'judge_failed') AS failure,
       count(*) FILTER (WHERE j.status = 'missing') AS n_missing,
       count(*) FILTER (WHERE j.status = 'invalid') AS n_invalid,
       coalesce((SELECT json_group_object(d.dimension, json_object('score', d.score, 'status', d.status,
                                                                   'reason', d.reason))
                 FROM eval.casegen_judgements d
                 WHERE d.item_id = j.item_id AND d.model = j.model AND d.judge_model = j.judge_model
                   AND d.status <> 'judge_failed'), '{}'::JSON) AS dimensions
FROM eval.casegen_judgements j
GROUP BY j.item_id, j.model, j.judge_model;

-- every score of every item of every run: judge dimensions (not of a failed call) and reference metrics
CREATE TEMP TABLE _casegen_values AS
SELECT r.eval_run_id, k.item_id, k.task, 'judge_' || j.dimension AS name, j.score AS value, NULL AS reason
FROM _casegen_runs r
JOIN _casegen_keys k USING (model)
JOIN eval.casegen_judgements j ON j.item_id = k.item_id AND j.model = k.model AND j.judge_model = r.judge_model
WHERE j.status <> 'judge_failed'
UNION ALL
SELECT r.eval_run_id, k.item_id, k.task, m.metric, m.value, m.reason
FROM _casegen_runs r
JOIN _casegen_keys k USING (model)
JOIN eval.casegen_metrics m ON m.item_id = k.item_id AND m.model = k.model;

-- one row per (run, item), with what the counts need
CREATE TEMP TABLE _casegen_items AS
SELECT r.eval_run_id, k.item_id, k.task, r.judge_model,
       json_object('task', k.task, 'doc_id', i.doc_id, 'source', i.source, 'content_sha256', i.content_sha256,
                   'reference_sha256', sha256(i.reference), 'reference_chars', length(i.reference)) AS gold,
       json_object('text', g.output_text, 'backend', g.backend, 'request_identity', g.request_identity,
                   'input', CASE WHEN g.item_id IS NOT NULL THEN
                                json_object('cut', g.input_cut, 'unit', g.input_unit, 'length', g.input_length,
                                            'kept', g.input_length_kept) END,
                   'judge', CASE WHEN jd.item_id IS NOT NULL THEN
                                json_object('model', jd.judge_model, 'backend', NULL,
                                            'request_identity', jd.request_identity, 'reply_format', jd.reply_format,
                                            'status', CASE WHEN jd.failed THEN 'failed' ELSE 'ok' END,
                                            'reason', jd.failure, 'dimensions', jd.dimensions) END,
                   'ops_run_id', g.run_id) AS predicted,
       coalesce((SELECT json_group_object(v.name, v.value) FROM _casegen_values v
                 WHERE v.eval_run_id = r.eval_run_id AND v.item_id = k.item_id), '{}'::JSON) AS scores,
       coalesce(g.status, 'failed') AS status,
       CASE WHEN g.status IS NULL THEN 'no generation recorded (moved from eval.casegen_* by migration 112)'
            WHEN g.status <> 'ok' THEN 'generation failed: ' || coalesce(g.error, 'no reason recorded') END AS reason,
       coalesce(g.input_cut, false) AS input_cut, coalesce(jd.failed, false) AS judge_failed,
       coalesce(jd.n_missing, 0) AS n_missing, coalesce(jd.n_invalid, 0) AS n_invalid
FROM _casegen_runs r
JOIN _casegen_keys k USING (model)
LEFT JOIN eval.casegen_generations g ON g.item_id = k.item_id AND g.model = k.model
LEFT JOIN curated.casegen_items i ON i.item_id = k.item_id
LEFT JOIN _casegen_judged jd ON jd.item_id = k.item_id AND jd.model = k.model AND jd.judge_model = r.judge_model;

INSERT OR REPLACE INTO eval.item_outputs (eval_run_id, item_id, gold, predicted, scores, status, reason)
SELECT eval_run_id, item_id, gold, predicted, scores, status, reason FROM _casegen_items;

INSERT OR REPLACE INTO eval.runs (eval_run_id, task, system, dataset, dataset_sha, params, n_items, n_failed,
                                  started_at, finished_at, backend, model)
SELECT r.eval_run_id, 'casegen', r.model, 'curated.casegen_items', r.dataset_sha, r.params, count(*),
       count(*) FILTER (WHERE o.status = 'failed'), r.started_at, r.finished_at, r.backend, r.model
FROM _casegen_runs r JOIN _casegen_items o USING (eval_run_id)
GROUP BY ALL;

DELETE FROM eval.metrics WHERE eval_run_id IN (SELECT eval_run_id FROM _casegen_runs);

-- counts over all tasks (`n`) and per task (`n/<task>`)
INSERT INTO eval.metrics (eval_run_id, metric, value, note)
SELECT eval_run_id, CASE WHEN whole = 1 THEN name ELSE name || '/' || task END, value, NULL
FROM (
    SELECT eval_run_id, task, grouping(task) AS whole,
           count(*)::DOUBLE AS n,
           count(*) FILTER (WHERE status = 'failed')::DOUBLE AS n_failed,
           count(*) FILTER (WHERE input_cut)::DOUBLE AS n_inputs_cut,
           count(*) FILTER (WHERE judge_failed)::DOUBLE AS n_judge_failed,
           sum(n_missing)::DOUBLE AS n_judge_scores_missing,
           sum(n_invalid)::DOUBLE AS n_judge_scores_invalid
    FROM _casegen_items
    GROUP BY GROUPING SETS ((eval_run_id), (eval_run_id, task))
) UNPIVOT (value FOR name IN (n, n_failed, n_inputs_cut, n_judge_failed, n_judge_scores_missing,
                              n_judge_scores_invalid));

-- means of every judge dimension and metric over the items that have a value, over all tasks and per task
INSERT INTO eval.metrics (eval_run_id, metric, value, note)
SELECT v.eval_run_id, CASE WHEN grouping(v.task) = 1 THEN v.name ELSE v.name || '/' || v.task END, avg(v.value),
       CASE WHEN v.name = 'bertscore_f1' AND count(v.value) = 0 THEN 'skipped: ' || coalesce(max(v.reason), 'no reason recorded')
            WHEN v.name IN ('bertscore_f1', 'rougeL_compat_f1') THEN max(v.reason)
            WHEN v.name = 'judge_overall' THEN 'judge ' || any_value(r.judge_model) || '; scores 1-10, mean over the scores read'
       END
FROM _casegen_values v JOIN _casegen_runs r USING (eval_run_id)
GROUP BY GROUPING SETS ((v.eval_run_id, v.name), (v.eval_run_id, v.name, v.task));

-- a run without a judge says so, as a new run with --skip-judge does
INSERT INTO eval.metrics (eval_run_id, metric, value, note)
SELECT eval_run_id, 'judge_overall', NULL, 'no judge scores in eval.casegen_judgements: reference metrics only'
FROM _casegen_runs WHERE judge_model IS NULL;

DROP TABLE _casegen_items;
DROP TABLE _casegen_values;
DROP TABLE _casegen_judged;
DROP TABLE _casegen_runs;
DROP TABLE _casegen_keys;

DROP TABLE eval.casegen_generations;
DROP TABLE eval.casegen_judgements;
DROP TABLE eval.casegen_metrics;
