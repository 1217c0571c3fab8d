-- The primary key columns of the curated and ops tables.
SELECT schema_name, table_name, constraint_column_names
FROM duckdb_constraints()
WHERE schema_name IN ('curated', 'ops') AND constraint_type = 'PRIMARY KEY';
