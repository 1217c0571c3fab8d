-- Judgments with text upstream whose paragraphs are not in the warehouse yet.
SELECT j.itemid
FROM curated.echr_judgments j
WHERE NOT coalesce(j.is_placeholder, false)
  AND NOT EXISTS (SELECT 1 FROM curated.echr_paragraphs p WHERE p.itemid = j.itemid)
ORDER BY j.judgment_date DESC, j.itemid
LIMIT $limit;
