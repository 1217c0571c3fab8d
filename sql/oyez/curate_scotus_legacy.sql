-- Upsert the legacy table, then carry its disposition onto the API-sourced cases (a changed row moves its
-- updated_at, which the Parquet mirror goes by).
INSERT OR REPLACE INTO curated.scotus_legacy
SELECT case_id, name, source_url, docket, term, first_party, second_party, facts, majority_vote,
       minority_vote, first_party_winner, decision_type, disposition, issue_area, raw_sha256
FROM staging.scotus_legacy;

UPDATE curated.scotus_cases AS c
SET disposition = l.disposition, updated_at = now()
FROM curated.scotus_legacy AS l
WHERE l.case_id = c.case_id AND c.disposition IS DISTINCT FROM l.disposition;
