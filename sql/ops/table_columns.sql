-- The columns of one table with their types, in order (a mirrored table whose columns changed is written anew).
SELECT column_name, data_type
FROM information_schema.columns
WHERE table_schema = ? AND table_name = ?
ORDER BY ordinal_position;
