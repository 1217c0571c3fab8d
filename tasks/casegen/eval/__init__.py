"""CaseGen evaluation: drafts by the evaluated models, the LLM judge, reference metrics, leaderboards."""
