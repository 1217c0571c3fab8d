-- The primary key columns of one table (none: an empty result).
SELECT unnest(constraint_column_names)
FROM duckdb_constraints()
WHERE schema_name = ? AND table_name = ? AND constraint_type = 'PRIMARY KEY';
