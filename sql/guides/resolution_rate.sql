-- Share of citations resolved to a HUDOC itemid, per guide, and how the pinpoints fared.
WITH pins AS (
    SELECT guide_id, count(*) AS pinpoints, count(echr_paragraph_ordinal) AS pinpoints_found
    FROM curated.guide_citation_pinpoints WHERE itemid IS NOT NULL GROUP BY guide_id
)
SELECT c.guide_id,
       count(*) AS citations,
       count(c.itemid) AS resolved,
       round(count(c.itemid) / count(*), 4) AS resolution_rate,
       count(*) FILTER (WHERE c.resolution_method = 'link') AS by_link,
       count(*) FILTER (WHERE c.resolution_method = 'link_fr_to_en') AS by_link_french_to_english,
       count(*) FILTER (WHERE c.resolution_method = 'link_fr') AS by_link_french_only,
       count(*) FILTER (WHERE c.resolution_method = 'name_year') AS by_name_year,
       count(*) FILTER (WHERE c.itemid IS NULL) AS unresolved,
       coalesce(max(p.pinpoints), 0) AS resolved_pinpoints,
       coalesce(max(p.pinpoints_found), 0) AS pinpoints_with_paragraph
FROM curated.guide_citations c
LEFT JOIN pins p USING (guide_id)
GROUP BY c.guide_id
ORDER BY c.guide_id;
