INSERT OR REPLACE INTO curated.barexam_questions
SELECT question_id, dataset, source, subject, prompt, question, choice_a, choice_b, choice_c, choice_d,
       answer, gold_passage_id, raw_sha256
FROM staging.barexam_questions;
