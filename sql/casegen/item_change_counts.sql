SELECT
    count(*) FILTER (WHERE c.item_id IS NULL)                                          AS new,
    count(*) FILTER (WHERE c.item_id IS NOT NULL AND c.content_sha256 <> s.content_sha256) AS changed,
    count(*) FILTER (WHERE c.item_id IS NOT NULL AND c.content_sha256 = s.content_sha256)  AS unchanged
FROM staging.casegen_items s
LEFT JOIN curated.casegen_items c USING (item_id);
