-- One document per Supreme Court case: facts + question + conclusion from the Oyez API table, and the
-- facts of the legacy table for cases the API table lacks. HTML tags in legacy facts are stripped later.
-- Fields are joined by a blank line, chr(10) || chr(10): DuckDB keeps '\n' in a string literal as a
-- backslash and an "n", which would glue an "n" to the next field's first word.
-- `fields` says what a document holds: all three summaries, some of them, or legacy facts only.
SELECT CAST(case_id AS VARCHAR) AS doc_id,
       concat_ws(chr(10) || chr(10), facts, question, conclusion) AS text,
       'oyez_api' AS origin,
       CASE WHEN facts IS NOT NULL AND question IS NOT NULL AND conclusion IS NOT NULL
            THEN 'facts+question+conclusion' ELSE 'api_partial' END AS fields
FROM curated.scotus_cases
WHERE coalesce(facts, question, conclusion) IS NOT NULL
UNION ALL
SELECT CAST(l.case_id AS VARCHAR), l.facts, 'oyez_legacy', 'facts_only'
FROM curated.scotus_legacy AS l
WHERE l.facts IS NOT NULL
  AND l.case_id NOT IN (SELECT case_id FROM curated.scotus_cases WHERE coalesce(facts, question, conclusion) IS NOT NULL)
ORDER BY doc_id;
