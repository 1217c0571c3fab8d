-- The kept question–answer pairs, as released.
SELECT qa_id, guide_id, strategy, question, answer, citations, comprehensiveness, conciseness, fluency,
       n_answer_sentences, n_cited_paragraphs
FROM curated.aquaechr_qa
WHERE kept
ORDER BY guide_id, qa_id;
