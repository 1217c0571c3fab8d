"""CASE: conflict-aware multi-agent answering (advocates with retrieval tools, a seeded persona jury)."""
