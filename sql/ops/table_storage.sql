-- One table's row count and, per column segment of every row group, where DuckDB keeps it, how many rows it holds
-- and whether it has pending updates ({table}: a checked identifier; $name: the same, as text). Reads no column.
SELECT (SELECT count(*) FROM {table}) AS rows,
       (SELECT coalesce(string_agg(concat_ws(':', row_group_id, column_id, segment_id, block_id, block_offset, count,
                                             has_updates, persistent), ','
                                   ORDER BY row_group_id, column_id, segment_id), '')
        FROM pragma_storage_info($name)) AS storage;
