-- How many representatives one selection holds.
SELECT count(*) FROM curated.cn_representatives WHERE selection = $selection;
