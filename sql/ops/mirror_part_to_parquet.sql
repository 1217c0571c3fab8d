-- The rows of one part of a table mirrored in parts: those whose {stamp} (epoch µs; NULL as -1) lies in
-- ($lower, $upper], to a Parquet file ({table} and {stamp} are checked identifiers; the path is a parameter), in
-- row groups of 10,000 rows as mirror_table_to_parquet.sql says why.
COPY (SELECT * FROM {table} WHERE coalesce(epoch_us({stamp}), -1) > $lower AND coalesce(epoch_us({stamp}), -1) <= $upper)
TO $path (FORMAT parquet, ROW_GROUP_SIZE 10000);
