-- The kept question–answer pairs, as released, with their provenance: the guide they come from (its version date
-- is source_date, what the fresh split is cut on: the answers are that guide's sentences), the archived payloads
-- of the guide, the newest judgment date among the cited judgments the warehouse has, and the model and prompt
-- hash of the call that wrote the question and of the judge's call (the latest successful call for the pair).
WITH calls AS (
    SELECT request->>'key' AS qa_id, step, model, template_sha, created_at
    FROM ops.llm_calls
    WHERE step LIKE 'aquaechr-%' AND status = 'ok'
),
question AS (
    SELECT qa_id, step, arg_max(model, created_at) AS model, arg_max(template_sha, created_at) AS prompt_sha256
    FROM calls WHERE step LIKE 'aquaechr-question-%' GROUP BY qa_id, step
),
judge AS (
    SELECT qa_id, arg_max(model, created_at) AS model, arg_max(template_sha, created_at) AS prompt_sha256
    FROM calls WHERE step = 'aquaechr-judge' GROUP BY qa_id
),
guides AS (
    SELECT guide_id, max(guide_version_date) AS guide_version_date,
           list(DISTINCT raw_sha256 ORDER BY raw_sha256) AS payloads
    FROM curated.guide_paragraphs GROUP BY guide_id
),
cited AS (
    SELECT q.qa_id, max(j.judgment_date) AS newest
    FROM curated.aquaechr_qa q,
         unnest(json_extract_string(q.citations, '$[*].citations[*].itemid')) AS t(itemid)
    JOIN curated.echr_judgments j ON j.itemid = t.itemid
    WHERE q.kept
    GROUP BY q.qa_id
)
SELECT q.qa_id, q.guide_id, q.strategy, q.question, q.answer, q.citations, q.comprehensiveness, q.conciseness,
       q.fluency, q.n_answer_sentences, q.n_cited_paragraphs,
       g.guide_version_date AS source_date, cited.newest AS newest_cited_judgment_date,
       g.payloads AS source_payload_sha256,
       qm.model, qm.prompt_sha256, jm.model AS judge_model, jm.prompt_sha256 AS judge_prompt_sha256
FROM curated.aquaechr_qa q
LEFT JOIN guides g USING (guide_id)
LEFT JOIN cited USING (qa_id)
LEFT JOIN question qm ON qm.qa_id = q.qa_id AND qm.step = 'aquaechr-question-' || q.strategy
LEFT JOIN judge jm ON jm.qa_id = q.qa_id
WHERE q.kept
ORDER BY q.guide_id, q.qa_id;
