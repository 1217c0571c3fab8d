-- Judgments known to the warehouse, for resolving a citation by name and year.
SELECT itemid, docname, year(judgment_date) AS year FROM curated.echr_judgments WHERE docname IS NOT NULL;
