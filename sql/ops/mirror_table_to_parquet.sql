-- One table (curated.x or ops.x) to a Parquet file ({table} is a checked identifier; the file path is a parameter).
-- Row groups of 10,000 rows: DuckDB holds a row group in memory until it is written, and at its default of 122,880
-- rows one of 50,000 Chinese judgments was 1 GB (under a 512 MB memory limit the mirror failed).
COPY (SELECT * FROM {table}) TO $path (FORMAT parquet, ROW_GROUP_SIZE 10000);
