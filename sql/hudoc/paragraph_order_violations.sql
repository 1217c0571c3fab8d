-- Audit: printed paragraph numbers that do not strictly increase within a part
-- (the operative list is numbered on its own). The parser quarantines such documents; this should be empty.
WITH numbered AS (
    SELECT itemid, part, section = 'OPERATIVE' AS operative, ordinal, TRY_CAST(para_no AS INTEGER) AS n
    FROM curated.echr_paragraphs WHERE para_no IS NOT NULL
), ordered AS (
    SELECT *, lag(n) OVER (PARTITION BY itemid, part, operative ORDER BY ordinal) AS previous_n FROM numbered
)
SELECT itemid, part, operative, ordinal, previous_n, n FROM ordered WHERE n <= previous_n ORDER BY itemid, ordinal;
