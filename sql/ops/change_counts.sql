-- How the staged batch of {table} compares with curated, row by row on {key}: new, changed (another
-- {content}), unchanged. The generic statement behind gate_and_load(..., content_column=...).
SELECT
    count(*) FILTER (WHERE c.{key} IS NULL)                                      AS new,
    count(*) FILTER (WHERE c.{key} IS NOT NULL AND c.{content} <> s.{content}) AS changed,
    count(*) FILTER (WHERE c.{key} IS NOT NULL AND c.{content} = s.{content})  AS unchanged
FROM staging.{table} s
LEFT JOIN curated.{table} c USING ({key});
