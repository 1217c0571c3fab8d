-- How the staged batch of {table} compares with {schema}.{table}, row by row on {key}: new, changed (any
-- column differs), unchanged. For a table whose staged rows carry every column as stored (no run id or
-- load time), e.g. the CaseFacts dataset.
SELECT
    count(*) FILTER (WHERE c.{key} IS NULL)                                AS new,
    count(*) FILTER (WHERE c.{key} IS NOT NULL AND s IS DISTINCT FROM c)     AS changed,
    count(*) FILTER (WHERE c.{key} IS NOT NULL AND s IS NOT DISTINCT FROM c) AS unchanged
FROM staging.{table} s
LEFT JOIN {schema}.{table} c ON c.{key} = s.{key};
