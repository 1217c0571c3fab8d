-- Upsert new and changed judgment records from staging; unchanged rows are left as they are. A changed record's
-- row is deleted and written again (the table has no index, migration 130: only this statement keeps itemid
-- unique).
DELETE FROM curated.echr_judgments
WHERE itemid IN (SELECT s.itemid FROM staging.echr_judgments s
                 JOIN curated.echr_judgments c USING (itemid)
                 WHERE c.raw_sha256 <> s.raw_sha256
                    OR c.docname IS DISTINCT FROM s.docname
                    OR c.conclusion IS DISTINCT FROM s.conclusion
                    OR c.is_placeholder IS DISTINCT FROM s.is_placeholder);
INSERT INTO curated.echr_judgments
SELECT s.itemid, s.docname, s.doctype, s.language, s.judgment_date, s.appnos, s.articles, s.importance,
       s.chamber, s.respondents, s.ecli, s.conclusion, s.originating_body_code, s.originating_body,
       s.originating_body_type, s.separate_opinion, s.is_placeholder, s.application, s.cited_case_law,
       s.source_url, s.raw_sha256, now()
FROM staging.echr_judgments s
WHERE NOT EXISTS (SELECT 1 FROM curated.echr_judgments c WHERE c.itemid = s.itemid);
