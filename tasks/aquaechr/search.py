"""Sentence embeddings from a local model folder: semantic search within a guide and question dedupe."""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from caseforge.embeddings import default_model_path, encode_unique, load_sentence_model
from caseforge.ranking import stable_order, stable_scores

__all__ = ["Embedder", "SentenceTransformerEmbedder", "default_model_path", "top_k"]


class Embedder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray:
        """One L2-normalised row per text."""


class SentenceTransformerEmbedder:
    def __init__(self, model_path: str | Path | None = None):
        self.model = load_sentence_model(model_path, "--embedding-model PATH")

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return encode_unique(self.model, texts, batch_size=32)


def top_k(query: np.ndarray, candidates: np.ndarray, k: int, exclude: set[int] = frozenset()) -> list[int]:
    """Indices of the k candidates most similar to the query (equal scores by position), skipping `exclude`."""
    scores = np.asarray(candidates, np.float64) @ np.asarray(query, np.float64)
    order = stable_order(scores, np.arange(len(scores)))
    return [int(i) for i in order if int(i) not in exclude][:k]


def duplicates(vectors: np.ndarray, threshold: float = 0.8) -> dict[int, int]:
    """Row → the earlier row it duplicates (cosine ≥ threshold); the first of a group survives."""
    found: dict[int, int] = {}
    kept: list[int] = []
    for i in range(len(vectors)):
        match = next((j for j in kept if stable_scores(np.dot(vectors[i].astype(np.float64), vectors[j]))
                      >= threshold - 1e-6), None)
        if match is None:
            kept.append(i)
        else:
            found[i] = match
    return found
