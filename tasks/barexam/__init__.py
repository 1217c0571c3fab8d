"""Bar Exam QA: questions and passages CASE and its baselines run on."""
