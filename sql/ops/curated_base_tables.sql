-- The curated tables (not views) the Parquet mirror copies, by name.
SELECT table_name FROM information_schema.tables
WHERE table_schema = 'curated' AND table_type = 'BASE TABLE'
ORDER BY table_name;
