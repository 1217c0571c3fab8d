SELECT passage_id AS doc_id, text FROM curated.barexam_passages ORDER BY passage_id;
