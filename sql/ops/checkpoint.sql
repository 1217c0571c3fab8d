-- Write the WAL into the database file (after migrations: see caseforge.warehouse.migrate).
CHECKPOINT;
