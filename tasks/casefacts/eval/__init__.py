"""CaseFacts evaluation: claims files, case-name matching, retrieval-only and LLM systems, metrics."""
