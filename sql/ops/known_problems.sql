-- The known problems per source: payloads recorded as loaded with quarantined records (ops.loaded_payloads),
-- how many records, and the run that first quarantined them (`caseforge status`).
SELECT source, sum(quarantined) AS records, count(*) AS payloads, min(problems_since) AS since
FROM ops.loaded_payloads
WHERE quarantined > 0
GROUP BY source
ORDER BY source;
