-- The metadata row a judgment body belongs to: a body is loaded only for an itemid the warehouse knows.
SELECT itemid, doctype
FROM curated.echr_judgments
WHERE itemid = ?;
