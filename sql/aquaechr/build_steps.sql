-- Models and prompt hashes of the LLM calls behind the kept pairs (questions, extractions, judge), for the card.
SELECT step AS stage, model, template_id, template_sha, count(*) AS requests
FROM ops.llm_calls
WHERE step LIKE 'aquaechr-%' AND status = 'ok'
  AND (request->>'key') IN (SELECT qa_id FROM curated.aquaechr_qa WHERE kept)
GROUP BY ALL
ORDER BY stage, model, template_sha;
