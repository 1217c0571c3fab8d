-- One curated table to a Parquet file ({table} is a checked identifier; the file path is a parameter).
COPY (SELECT * FROM curated.{table}) TO $path (FORMAT parquet);
