"""AQuAECHR: attributed question–answer pairs from the ECHR case-law guides."""
