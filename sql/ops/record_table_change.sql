-- One journaled change (caseforge.warehouse.changes): a statement file changed rows of a curated table.
INSERT INTO ops.table_changes (change_id, table_name, statement, rows, changed_at)
VALUES (nextval('ops.table_change_seq'), ?, ?, ?, ?);
