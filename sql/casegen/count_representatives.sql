SELECT count(*) FROM curated.cn_representatives;
