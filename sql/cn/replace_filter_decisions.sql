-- Decisions of one filter configuration replace that configuration's earlier decisions.
DELETE FROM curated.cn_filter_decisions WHERE filter_config = $filter_config;
