-- The write journal (issue 43): one row per statement file that changed rows of a curated table, written in the
-- same transaction as the change (caseforge.warehouse.changes). An input fingerprint reads a table's journal
-- (how many changes, the last one) instead of hashing every row. Rows are only ever added: a change id, drawn
-- from ops.table_change_seq, is never reused in one warehouse, so a table's count of changes grows with every
-- change that commits and with nothing else. `rows`: what the statement reported changing (NULL for a
-- statement that reports no count, e.g. a DROP TABLE).
CREATE SEQUENCE IF NOT EXISTS ops.table_change_seq;
CREATE TABLE IF NOT EXISTS ops.table_changes (
    change_id  BIGINT NOT NULL,
    table_name VARCHAR NOT NULL,
    statement  VARCHAR NOT NULL,
    rows       BIGINT,
    changed_at TIMESTAMPTZ NOT NULL
);
