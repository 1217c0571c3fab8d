-- How often the build's quality judge gave each score, per dimension, over every candidate pair.
SELECT dimension, score, count(*) AS n
FROM (SELECT 'comprehensiveness' AS dimension, comprehensiveness AS score FROM curated.aquaechr_qa
      UNION ALL SELECT 'conciseness', conciseness FROM curated.aquaechr_qa
      UNION ALL SELECT 'fluency', fluency FROM curated.aquaechr_qa)
WHERE score IS NOT NULL
GROUP BY dimension, score
ORDER BY dimension, score;
