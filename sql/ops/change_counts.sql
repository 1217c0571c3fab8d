-- How the staged batch of {table} compares with curated, row by row on its key ({key}: one column or several):
-- new, changed (another {content}), unchanged. The generic statement behind gate_and_load(..., content_column=...).
SELECT
    count(*) FILTER (WHERE c.stored IS NULL)                          AS new,
    count(*) FILTER (WHERE c.stored AND c.{content} <> s.{content})   AS changed,
    count(*) FILTER (WHERE c.stored AND c.{content} = s.{content})    AS unchanged
FROM staging.{table} s
LEFT JOIN (SELECT *, true AS stored FROM curated.{table}) c USING ({key});
