-- Guide paragraphs in reading order ($guides: list of guide ids, or NULL for all).
SELECT guide_id, CAST(para_no AS VARCHAR) AS para_no, heading_path, text
FROM curated.guide_paragraphs
WHERE text IS NOT NULL AND trim(text) <> ''
  AND ($guides IS NULL OR list_contains($guides, guide_id))
ORDER BY guide_id, TRY_CAST(para_no AS INTEGER) NULLS LAST, para_no;
