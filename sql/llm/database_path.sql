-- The file behind this connection's database (NULL for an in-memory database): shard folders go next to it.
SELECT path FROM duckdb_databases() WHERE database_name = current_database();
