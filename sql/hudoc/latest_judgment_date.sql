-- Where an incremental metadata refresh starts (before the overlap is subtracted).
SELECT max(judgment_date) FROM curated.echr_judgments;
