"""Evaluation of retrieval and verification systems: CaseFacts metrics and runs, CASE."""
