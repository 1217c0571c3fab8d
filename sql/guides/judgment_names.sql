-- Judgments known to the warehouse, for resolving a citation by name and year (in itemid order, so a
-- name two judgments share resolves the same way every time).
SELECT itemid, docname, year(judgment_date) AS year FROM curated.echr_judgments WHERE docname IS NOT NULL
ORDER BY itemid;
