SELECT question_id, prompt, question, choice_a, choice_b, choice_c, choice_d, answer, gold_passage_id
FROM curated.barexam_questions ORDER BY question_id;
