-- A selection is recomputed as a whole: drop its earlier rows first.
DELETE FROM curated.cn_representatives WHERE selection = $selection;
