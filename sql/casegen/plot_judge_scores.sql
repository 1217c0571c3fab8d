-- How often the judge gave each score (1-10), per dimension, in the latest CaseGen evaluation run
-- (eval.item_outputs scores `judge_<dimension>`); its system names the plot.
WITH latest AS (
    SELECT eval_run_id, system FROM eval.runs WHERE task = 'casegen'
    ORDER BY finished_at DESC NULLS LAST, eval_run_id LIMIT 1
), scored AS (
    SELECT l.system, unnest(json_keys(o.scores)) AS name, o.scores
    FROM eval.item_outputs o JOIN latest l USING (eval_run_id)
)
SELECT system, substr(name, 7) AS dimension,
       CAST(round(CAST(json_extract_string(scores, '$."' || name || '"') AS DOUBLE)) AS INTEGER) AS score,
       count(*) AS n
FROM scored
WHERE starts_with(name, 'judge_') AND json_extract_string(scores, '$."' || name || '"') IS NOT NULL
GROUP BY ALL
ORDER BY dimension, score;
