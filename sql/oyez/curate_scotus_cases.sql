-- Upsert new and changed cases from staging; unchanged rows are left as they are. A changed case's row is
-- deleted and written again (the table has no index, migration 130: only this statement keeps case_id unique).
DELETE FROM curated.scotus_cases
WHERE case_id IN (SELECT s.case_id FROM staging.scotus_cases s
                  JOIN curated.scotus_cases c USING (case_id)
                  WHERE c.raw_sha256 <> s.raw_sha256);
INSERT INTO curated.scotus_cases
SELECT s.case_id, s.name, s.term, s.docket, s.decided_date, s.argued_date,
       s.first_party, s.second_party, s.first_party_label, s.second_party_label,
       s.facts, s.question, s.conclusion, s.description,
       s.decision_type, s.majority_vote, s.minority_vote, s.winning_party, s.decision_count, s.decisions,
       s.citation, s.citation_volume, s.citation_page, s.citation_year,
       s.lower_court, s.manner_of_jurisdiction, s.justia_url, s.source_url, s.raw_sha256,
       l.disposition, now()
FROM staging.scotus_cases s
LEFT JOIN curated.scotus_legacy l USING (case_id)
WHERE NOT EXISTS (SELECT 1 FROM curated.scotus_cases c WHERE c.case_id = s.case_id);
