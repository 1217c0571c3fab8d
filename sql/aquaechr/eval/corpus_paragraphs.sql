SELECT p.itemid, p.para_no, p.text, coalesce(j.docname, p.itemid) AS case_name
FROM curated.echr_paragraphs p
LEFT JOIN curated.echr_judgments j USING (itemid)
WHERE p.para_no IS NOT NULL AND regexp_matches(p.para_no, '^[0-9]+$')
ORDER BY p.itemid, p.ordinal;
