"""AQuAECHR evaluation: attributed QA systems, citation parsing, NLI, metrics, and the judge's agreement with experts."""
