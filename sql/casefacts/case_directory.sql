-- Every case name the warehouse knows, with the decision date where the Oyez API gave one and the
-- Oyez term (API table, else legacy table). The legacy table contributes names, ids, dispositions and
-- terms but never decision days. Ordered, so a name several rows share resolves the same way every time.
SELECT c.case_id, c.name, coalesce(c.term, l.term) AS term, c.decided_date, coalesce(c.disposition, l.disposition) AS disposition,
       c.first_party, c.second_party, 'scotus_cases' AS source
FROM curated.scotus_cases c
LEFT JOIN curated.scotus_legacy l USING (case_id)
UNION ALL
SELECT l.case_id, l.name, l.term, c.decided_date, l.disposition, l.first_party, l.second_party, 'scotus_legacy'
FROM curated.scotus_legacy l
LEFT JOIN curated.scotus_cases c USING (case_id)
WHERE c.case_id IS NULL OR lower(c.name) <> lower(l.name)
ORDER BY case_id, source;
