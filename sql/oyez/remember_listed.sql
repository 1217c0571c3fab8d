-- A case-list entry settled by this refresh (fetched and loaded, or quarantined).
INSERT OR REPLACE INTO ops.oyez_list_state (key, href, summary_sha, seen_at) VALUES (?, ?, ?, ?);
