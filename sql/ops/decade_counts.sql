-- Cases per decade of decision (the plot the nightly publishes for curated.scotus_cases).
SELECT (year(decided_date) // 10 * 10)::VARCHAR || 's' AS decade, count(*) AS cases
FROM curated.scotus_cases
WHERE decided_date IS NOT NULL
GROUP BY ALL
ORDER BY decade;
