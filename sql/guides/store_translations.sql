-- Replace the French → English itemid table from the staged copy.
DELETE FROM curated.echr_itemid_translations;
INSERT INTO curated.echr_itemid_translations SELECT fre_id, eng_id, eng_docname FROM translations_frame;
