-- Cached final answers with their whole request, for a replay file ($step: one step, or NULL for all).
SELECT identity, model, step, template_id, request, response_text, served_model
FROM ops.llm_calls
WHERE response_text IS NOT NULL AND status <> 'unanswered' AND ($step IS NULL OR step = $step)
ORDER BY step, identity;
