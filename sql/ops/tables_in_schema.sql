-- Names of the tables and views in one schema.
SELECT table_name FROM information_schema.tables WHERE table_schema = ? ORDER BY table_name;
