-- The released columns of curated.scotus_cases (updated_at is warehouse bookkeeping, not data).
SELECT case_id, name, term, docket, decided_date, argued_date, first_party, second_party,
       first_party_label, second_party_label, facts, question, conclusion, description,
       decision_type, majority_vote, minority_vote, winning_party, decision_count, decisions,
       citation, citation_volume, citation_page, citation_year, lower_court, manner_of_jurisdiction,
       justia_url, source_url, raw_sha256, disposition
FROM curated.scotus_cases
ORDER BY case_id;
