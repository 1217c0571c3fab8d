"""CASE on Bar Exam QA, with its baselines."""
