-- The columns of the curated and ops tables with their types, in order (a mirrored table whose columns changed
-- is written anew; a table with a stamp column is mirrored in parts).
SELECT table_schema, table_name, column_name, data_type
FROM information_schema.columns
WHERE table_schema IN ('curated', 'ops')
ORDER BY table_schema, table_name, ordinal_position;
