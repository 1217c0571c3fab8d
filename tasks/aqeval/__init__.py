"""AQuAECHR attributed question answering: systems, citation parsing and metrics."""
