-- Make the French → English itemid table what the staged copy (translations_frame) holds: rows it no longer holds
-- as they are are deleted, its new rows inserted. A file read again unchanged changes no row, so nothing that
-- reads the table sees a change (the write journal records none).
DELETE FROM curated.echr_itemid_translations AS c
WHERE NOT EXISTS (SELECT 1 FROM translations_frame AS t
                  WHERE t.fre_id = c.fre_id AND t.eng_id IS NOT DISTINCT FROM c.eng_id
                    AND t.eng_docname IS NOT DISTINCT FROM c.eng_docname);
INSERT INTO curated.echr_itemid_translations
SELECT t.fre_id, t.eng_id, t.eng_docname FROM translations_frame AS t
WHERE NOT EXISTS (SELECT 1 FROM curated.echr_itemid_translations AS c WHERE c.fre_id = t.fre_id);
