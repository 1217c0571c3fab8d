-- How many staged judgment records are new, and how many change a curated row.
SELECT count(*) FILTER (WHERE c.itemid IS NULL) AS new,
       count(*) FILTER (WHERE c.itemid IS NOT NULL AND (c.docname IS DISTINCT FROM s.docname
                        OR c.conclusion IS DISTINCT FROM s.conclusion
                        OR c.is_placeholder IS DISTINCT FROM s.is_placeholder)) AS changed
FROM staging.echr_judgments s
LEFT JOIN curated.echr_judgments c USING (itemid);
