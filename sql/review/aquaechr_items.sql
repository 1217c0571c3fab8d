-- AQuAECHR question–answer pairs the quality judge scored (kept or not) as review items: the question, the answer
-- and the paragraphs it cites; the judge's three scores (hidden from the annotator); the stratum (kept, score
-- band of the judge's total, no source year: a guide is not dated).
SELECT q.qa_id AS item_id, CASE WHEN q.kept THEN 'kept' ELSE 'removed' END AS label,
       CASE WHEN q.comprehensiveness + q.conciseness + q.fluency <= 9 THEN 'low'
            WHEN q.comprehensiveness + q.conciseness + q.fluency <= 12 THEN 'mid' ELSE 'high' END AS band,
       CAST(NULL AS INTEGER) AS year,
       json_object('comprehensiveness', CAST(q.comprehensiveness AS VARCHAR),
                   'conciseness', CAST(q.conciseness AS VARCHAR),
                   'answer_fluency', CAST(q.fluency AS VARCHAR)) AS judge,
       json_object('question', coalesce(q.question, ''), 'answer', coalesce(q.answer, ''),
                   'paragraphs', coalesce((
                       SELECT string_agg(coalesce(json_extract_string(c.value, '$.case_name'), '') || ' § ' ||
                                         coalesce(json_extract_string(p.value, '$.para_no'), '') || ': ' ||
                                         coalesce(json_extract_string(p.value, '$.text'), ''), chr(10) || chr(10))
                       FROM json_each(q.citations) s, json_each(s.value -> '$.citations') c,
                            json_each(c.value -> '$.passages') p), '')) AS data
FROM curated.aquaechr_qa q
WHERE q.comprehensiveness IS NOT NULL AND q.conciseness IS NOT NULL AND q.fluency IS NOT NULL
ORDER BY q.qa_id;
