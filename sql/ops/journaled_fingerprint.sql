-- A journaled table's fingerprint ({table}: a checked identifier; $schema, $name its parts): its row count, how
-- many changes the write journal holds for it and the last one, its columns and the migrations applied (a
-- migration may change rows outside the journal), and what DuckDB's storage says of it (the rows ever appended
-- and, per column segment, its block, size and pending updates: a write by a program other than caseforge moves
-- them). Reads no row of the table: only its count and metadata.
SELECT (SELECT count(*) FROM {table})                                                           AS rows,
       (SELECT count(*) FROM ops.table_changes WHERE table_name = $schema || '.' || $name)      AS changes,
       (SELECT max(change_id) FROM ops.table_changes WHERE table_name = $schema || '.' || $name) AS last_change,
       (SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY column_index)
        FROM duckdb_columns() WHERE schema_name = $schema AND table_name = $name)                AS columns,
       (SELECT string_agg(number::VARCHAR, ',' ORDER BY number) FROM ops.migrations)             AS migrations,
       (SELECT estimated_size FROM duckdb_tables() WHERE schema_name = $schema AND table_name = $name)
       || '/' ||
       (SELECT coalesce(string_agg(concat_ws(':', row_group_id, column_id, segment_id, block_id, block_offset, count,
                                             has_updates, persistent), ','
                                   ORDER BY row_group_id, column_id, segment_id), '')
        FROM pragma_storage_info($schema || '.' || $name))                                      AS storage;
