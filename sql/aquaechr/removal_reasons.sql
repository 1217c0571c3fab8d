-- Why pairs were removed: the reason's kind (before ':' or ' ('), with counts.
SELECT split_part(split_part(removal_reason, ':', 1), ' (', 1) AS reason, count(*) AS pairs
FROM curated.aquaechr_qa
WHERE NOT kept
GROUP BY ALL
ORDER BY 2 DESC, 1;
