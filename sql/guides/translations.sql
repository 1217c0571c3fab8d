-- The French → English itemid table, as the resolver uses it.
SELECT fre_id, eng_id, eng_docname FROM curated.echr_itemid_translations ORDER BY fre_id;
