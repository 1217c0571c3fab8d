-- What the answers behind a release cost when they were made: every answer in the LLM cache (ok or failed; a
-- request no endpoint answered is none) of the steps, models and prompt versions the release's card names (the
-- registered table release_stages: stage, model, template_sha), per stage, model and the model that served.
-- Model time is summed in whole milliseconds, so the card's bytes do not depend on the order DuckDB adds them in.
SELECT c.step AS stage, c.model, coalesce(c.served_model, 'not recorded') AS served_model,
       count(*)::BIGINT AS calls,
       coalesce(sum(c.prompt_tokens), 0)::BIGINT AS prompt_tokens,
       coalesce(sum(c.completion_tokens), 0)::BIGINT AS completion_tokens,
       coalesce(sum(round(c.latency_ms)::BIGINT), 0)::BIGINT AS model_ms
FROM ops.llm_calls AS c
JOIN (SELECT DISTINCT stage, model, template_sha FROM release_stages) AS s
  ON c.step = s.stage AND c.model = s.model AND c.template_sha IS NOT DISTINCT FROM s.template_sha
WHERE c.status <> 'unanswered'
GROUP BY ALL
ORDER BY stage, model, served_model;
