-- The tasks the CaseGen build could not cut, by task and reason (the release card's distribution).
SELECT task, reason, count(*) AS n FROM curated.casegen_item_skips GROUP BY ALL ORDER BY ALL;
