-- Every known name of every Supreme Court case (API and legacy tables), for matching names to ids.
SELECT CAST(case_id AS VARCHAR) AS case_id, name FROM curated.scotus_cases
UNION
SELECT CAST(case_id AS VARCHAR), name FROM curated.scotus_legacy
ORDER BY case_id, name;
