-- Per journaled table, how many changes the write journal holds for it and the last one (caseforge.warehouse.table_state).
SELECT table_name, count(*) AS changes, max(change_id) AS last_change
FROM ops.table_changes
GROUP BY table_name;
