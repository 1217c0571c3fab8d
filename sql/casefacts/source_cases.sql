-- Cases with facts, question and conclusion (the evidence a claim is generated from), oldest id first.
SELECT case_id, name, decided_date, disposition, facts, question, conclusion, first_party, second_party, raw_sha256
FROM curated.scotus_cases
WHERE nullif(trim(facts), '') IS NOT NULL AND nullif(trim(question), '') IS NOT NULL
  AND nullif(trim(conclusion), '') IS NOT NULL
ORDER BY case_id
LIMIT coalesce(CAST($limit AS BIGINT), 9223372036854775807);
