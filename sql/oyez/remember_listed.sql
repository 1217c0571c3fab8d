-- The case-list entries settled by this refresh (_rows: key, href, summary_sha, seen_at; fetched and loaded,
-- or quarantined), in one statement.
INSERT OR REPLACE INTO ops.oyez_list_state (key, href, summary_sha, seen_at)
SELECT key, href, summary_sha, seen_at FROM _rows;
