-- Upsert the run's candidates by qa_id (strategy + source window): a re-run replaces, never duplicates.
INSERT OR REPLACE INTO curated.aquaechr_qa
SELECT qa_id, guide_id, window_id, strategy, question, answer, citations, context_para_nos,
       comprehensiveness, conciseness, fluency, judge_analysis, kept, removal_reason,
       n_answer_sentences, n_cited_paragraphs, run_id, now()
FROM staging.aquaechr_qa;
