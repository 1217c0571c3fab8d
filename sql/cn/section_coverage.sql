-- Share of curated judgments that have each section, by source format.
SELECT source_format, count(*) AS documents,
       avg((header IS NOT NULL)::INT) AS header, avg((parties IS NOT NULL)::INT) AS parties,
       avg((procedure_record IS NOT NULL)::INT) AS procedure_record, avg((claims IS NOT NULL)::INT) AS claims,
       avg((defense IS NOT NULL)::INT) AS defense, avg((evidence IS NOT NULL)::INT) AS evidence,
       avg((facts IS NOT NULL)::INT) AS facts, avg((reasoning IS NOT NULL)::INT) AS reasoning,
       avg((judgment IS NOT NULL)::INT) AS judgment, avg((tail IS NOT NULL)::INT) AS tail,
       avg(complete::INT) AS complete
FROM curated.cn_judgments
GROUP BY source_format
ORDER BY source_format;
