SELECT qa_id, guide_id, question, answer, citations, strategy
FROM curated.aquaechr_qa
WHERE kept
ORDER BY qa_id;
