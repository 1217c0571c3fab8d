-- Judgment paragraphs of the cited judgments ($itemids), keyed by paragraph number.
SELECT itemid, CAST(para_no AS VARCHAR) AS para_no, text
FROM curated.echr_paragraphs
WHERE list_contains($itemids, itemid);
