-- Label-like distributions of released columns for the dataset card: one (name, value, count) row each. An empty
-- value says why it is empty (the card explains each, tasks/oyez/release.py).
SELECT 'decision_type' AS name, coalesce(decision_type, '(empty)') AS value, count(*) AS n
FROM curated.scotus_cases GROUP BY ALL
UNION ALL
SELECT 'disposition',
       CASE WHEN c.disposition IS NOT NULL THEN c.disposition
            WHEN l.case_id IS NULL THEN '(empty: not in the legacy table)'
            ELSE '(empty in the legacy table)' END,
       count(*)
FROM curated.scotus_cases c LEFT JOIN curated.scotus_legacy l USING (case_id) GROUP BY ALL
ORDER BY 1, 2;
