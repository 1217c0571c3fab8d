-- The case-list entries seen at the last refresh: key → hash of its summary.
SELECT key, summary_sha FROM ops.oyez_list_state;
