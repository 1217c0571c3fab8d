-- How many documents each filter reason excluded (a document may have several reasons).
SELECT reason, count(*) AS documents
FROM (SELECT unnest(CAST(reasons AS VARCHAR[])) AS reason
      FROM curated.cn_filter_decisions WHERE filter_config = $filter_config AND NOT kept)
GROUP BY reason
ORDER BY documents DESC, reason;
