"""Semantic search within a guide and question dedupe, over embeddings (caseforge.embeddings)."""
from __future__ import annotations

from typing import Protocol

import numpy as np

from caseforge.ranking import stable_order, stable_scores



class Embedder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray:
        """One L2-normalised row per text."""


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
