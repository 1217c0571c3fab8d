-- How many judgments one filter configuration keeps and excludes.
SELECT count(*) FILTER (WHERE kept) AS kept, count(*) FILTER (WHERE NOT kept) AS excluded
FROM curated.cn_filter_decisions
WHERE filter_config = $filter_config;
