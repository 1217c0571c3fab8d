-- The file of the connection's database (NULL in memory): the Parquet mirror's manifest names it.
SELECT path FROM duckdb_databases() WHERE database_name = current_database();
