-- Per table of one schema ($schema): the rows DuckDB says were ever appended to it and its columns with their types
-- (caseforge.warehouse.table_state). Reads the catalog only.
SELECT t.schema_name || '.' || t.table_name AS name, t.estimated_size,
       string_agg(c.column_name || ' ' || c.data_type, ', ' ORDER BY c.column_index) AS columns
FROM duckdb_tables() t
JOIN duckdb_columns() c
  ON c.database_oid = t.database_oid AND c.schema_name = t.schema_name AND c.table_name = t.table_name
WHERE t.schema_name = $schema AND t.database_name = current_database()
GROUP BY t.schema_name, t.table_name, t.estimated_size;
