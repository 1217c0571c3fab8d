-- The metadata row a judgment body belongs to (its doctype decides whether it must have an operative part).
SELECT itemid, doctype
FROM curated.echr_judgments
WHERE itemid = ?;
