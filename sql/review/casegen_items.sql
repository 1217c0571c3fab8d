-- CaseGen drafts the judge scored, as review items (one per item and drafting model; its latest evaluation run in
-- the store, eval.runs of task casegen and eval.item_outputs): the draft beside the source sections it was written
-- from and the dimensions of its task; the judge's scores (predicted.judge, hidden from the annotator); the
-- stratum (task, score band of the judge's overall score, year of the judgment the item comes from).
WITH judged AS (
    SELECT o.item_id, r.model, json_extract_string(o.gold, '$.task') AS task, json_extract_string(o.predicted, '$.text') AS draft,
           json_extract(o.predicted, '$.judge.dimensions') AS dimensions
    FROM eval.item_outputs o
    JOIN eval.runs r ON r.eval_run_id = o.eval_run_id
    WHERE r.task = 'casegen' AND o.status = 'ok' AND json_extract_string(o.predicted, '$.judge.status') = 'ok'
    QUALIFY row_number() OVER (PARTITION BY o.item_id, r.model
                               ORDER BY r.finished_at DESC NULLS LAST, r.eval_run_id) = 1
),
scores AS (
    SELECT j.item_id, j.model, d.key AS dimension,
           CAST(round(CAST(json_extract_string(d.value, '$.score') AS DOUBLE)) AS INTEGER) AS score
    FROM judged j, json_each(j.dimensions) d
    WHERE json_extract_string(d.value, '$.status') = 'ok' AND json_extract_string(d.value, '$.score') IS NOT NULL
),
by_item AS (
    SELECT item_id, model, json_group_object(dimension, CAST(score AS VARCHAR)) AS judge,
           string_agg(dimension, ', ' ORDER BY dimension) AS dimension_names,
           max(score) FILTER (dimension = 'overall') AS overall
    FROM scores GROUP BY item_id, model
)
SELECT j.item_id || '|' || j.model AS item_id, j.task AS label,
       CASE WHEN s.overall <= 4 THEN 'low' WHEN s.overall <= 7 THEN 'mid' WHEN s.overall > 7 THEN 'high' END AS band,
       year(TRY_CAST(c.judgment_date AS DATE)) AS year, s.judge,
       json_object('draft', coalesce(j.draft, ''), 'dimensions', s.dimension_names,
                   'sources', (SELECT string_agg(e.key || ':' || chr(10) || coalesce(json_extract_string(e.value, '$'), ''),
                                                 chr(10) || chr(10) ORDER BY e.key)
                               FROM json_each(i.inputs) e)) AS data
FROM judged j
JOIN by_item s ON s.item_id = j.item_id AND s.model = j.model
JOIN curated.casegen_items i ON i.item_id = j.item_id
LEFT JOIN curated.cn_judgments c ON c.doc_id = i.doc_id
ORDER BY 1;
