-- Label-like distributions for the dataset card: one (name, value, count) row each.
SELECT 'decision_type' AS name, coalesce(decision_type, '(none)') AS value, count(*) AS n
FROM curated.scotus_cases GROUP BY ALL
UNION ALL
SELECT 'disposition', coalesce(disposition, '(none)'), count(*) FROM curated.scotus_cases GROUP BY ALL
UNION ALL
SELECT 'winning_party_is_first', CASE WHEN winning_party IS NULL THEN '(none)'
                                      WHEN winning_party = first_party THEN 'yes' ELSE 'no' END, count(*)
FROM curated.scotus_cases GROUP BY ALL
ORDER BY 1, 2;
