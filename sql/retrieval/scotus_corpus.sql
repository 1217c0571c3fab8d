-- One document per Supreme Court case: facts + question + conclusion from the Oyez API table, and the
-- facts of the legacy table for cases the API table lacks. HTML tags in legacy facts are stripped later.
SELECT CAST(case_id AS VARCHAR) AS doc_id,
       concat_ws('\n\n', facts, question, conclusion) AS text,
       'oyez_api' AS origin
FROM curated.scotus_cases
WHERE coalesce(facts, question, conclusion) IS NOT NULL
UNION ALL
SELECT CAST(l.case_id AS VARCHAR), l.facts, 'oyez_legacy'
FROM curated.scotus_legacy AS l
WHERE l.facts IS NOT NULL
  AND l.case_id NOT IN (SELECT case_id FROM curated.scotus_cases WHERE coalesce(facts, question, conclusion) IS NOT NULL)
ORDER BY doc_id;
