-- Dataset card: kept pairs and removals per guide and strategy.
SELECT guide_id, strategy, count(*) FILTER (WHERE kept) AS kept, count(*) FILTER (WHERE NOT kept) AS removed
FROM curated.aquaechr_qa
GROUP BY ALL
ORDER BY guide_id, strategy;
