-- How the staged pairs compare with curated.aquaechr_qa by qa_id: new, changed (a content column differs; the
-- run that wrote the pair and its load time do not count), unchanged.
SELECT
    count(*) FILTER (WHERE c.qa_id IS NULL) AS new,
    count(*) FILTER (WHERE c.qa_id IS NOT NULL AND staged IS DISTINCT FROM stored) AS changed,
    count(*) FILTER (WHERE c.qa_id IS NOT NULL AND staged IS NOT DISTINCT FROM stored) AS unchanged
FROM staging.aquaechr_qa s
LEFT JOIN curated.aquaechr_qa c USING (qa_id),
LATERAL (SELECT
    ROW(s.guide_id, s.window_id, s.strategy, s.question, s.answer, s.citations::VARCHAR, s.context_para_nos::VARCHAR,
        s.comprehensiveness, s.conciseness, s.fluency, s.judge_analysis, s.kept, s.removal_reason,
        s.n_answer_sentences, s.n_cited_paragraphs) AS staged,
    ROW(c.guide_id, c.window_id, c.strategy, c.question, c.answer, c.citations::VARCHAR, c.context_para_nos::VARCHAR,
        c.comprehensiveness, c.conciseness, c.fluency, c.judge_analysis, c.kept, c.removal_reason,
        c.n_answer_sentences, c.n_cited_paragraphs) AS stored);
