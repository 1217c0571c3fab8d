"""Model families, so the judge can be told apart from the generator."""
from __future__ import annotations

FAMILIES = ("qwen", "llama", "gemma", "mistral", "mixtral", "smollm", "gpt", "phi", "deepseek", "olmo", "claude")


def model_family(model: str) -> str:
    name = model.lower().rsplit("/", 1)[-1]
    return next((family for family in FAMILIES if family in name), name)
