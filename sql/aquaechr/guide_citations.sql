-- Guide citations (ibid. already resolved upstream) with the language of the judgment they resolve to.
SELECT c.guide_id, CAST(c.para_no AS VARCHAR) AS para_no, c.ordinal, c.case_name, c.year,
       CAST(c.pinpoints AS VARCHAR[]) AS pinpoints, c.raw_citation AS raw, c.itemid, j.language
FROM curated.guide_citations c
LEFT JOIN curated.echr_judgments j ON j.itemid = c.itemid
WHERE ($guides IS NULL OR list_contains($guides, c.guide_id))
ORDER BY c.guide_id, c.para_no, c.ordinal;
