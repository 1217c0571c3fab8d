-- The doctypes of the metadata rows of a batch's bodies ($itemids a list; a body with none has no row here).
SELECT itemid, doctype
FROM curated.echr_judgments
WHERE itemid IN (SELECT unnest($itemids::VARCHAR[]));
