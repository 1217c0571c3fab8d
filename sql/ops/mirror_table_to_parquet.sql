-- One table (curated.x or ops.x) to a Parquet file ({table} is a checked identifier; the file path is a parameter).
COPY (SELECT * FROM {table}) TO $path (FORMAT parquet);
