-- CaseGen drafts the judge scored as review items (one per item and drafting model): the draft beside the source
-- sections it was written from, the dimensions of its task; the judge's scores (hidden from the annotator); the
-- stratum (task, score band of the judge's overall score, year of the judgment the item comes from).
WITH scores AS (
    SELECT item_id, model, judge_model, json_group_object(dimension, CAST(CAST(round(score) AS INTEGER) AS VARCHAR)) AS judge,
           string_agg(dimension, ', ' ORDER BY dimension) AS dimensions, max(score) FILTER (dimension = 'overall') AS overall
    FROM eval.casegen_judgements
    WHERE status = 'ok'
    GROUP BY item_id, model, judge_model
)
SELECT s.item_id || '|' || s.model AS item_id, i.task AS label,
       CASE WHEN s.overall <= 4 THEN 'low' WHEN s.overall <= 7 THEN 'mid' ELSE 'high' END AS band,
       year(TRY_CAST(j.judgment_date AS DATE)) AS year, s.judge,
       json_object('draft', coalesce(g.output_text, ''), 'dimensions', s.dimensions,
                   'sources', CAST(i.inputs AS VARCHAR)) AS data
FROM scores s
JOIN eval.casegen_generations g ON g.item_id = s.item_id AND g.model = s.model
JOIN curated.casegen_items i ON i.item_id = s.item_id
LEFT JOIN curated.cn_judgments j ON j.doc_id = i.doc_id
QUALIFY row_number() OVER (PARTITION BY s.item_id, s.model ORDER BY s.judge_model) = 1
ORDER BY 1;
