-- The tables and views a query connection can read, as schema.name (for the Parquet mirror: what it carries).
SELECT schema_name || '.' || table_name AS name FROM duckdb_tables() WHERE NOT internal AND NOT temporary
UNION ALL
SELECT schema_name || '.' || view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary
ORDER BY name;
