-- Judgment paragraphs of the cited judgments ($itemids), one per printed paragraph number: a pinpoint
-- "§ n" means the judgment's own paragraph n, not the operative part's or an opinion's (both restart at 1).
SELECT itemid, CAST(para_no AS VARCHAR) AS para_no, text
FROM curated.echr_paragraphs
WHERE list_contains($itemids, itemid) AND para_no IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY itemid, CAST(para_no AS VARCHAR)
                           ORDER BY (part = 'judgment') DESC, (section = 'OPERATIVE') ASC, ordinal) = 1
ORDER BY itemid, para_no;
