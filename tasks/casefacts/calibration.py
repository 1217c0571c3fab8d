"""Similarity windows from judged samples: the interval holding a share of the detected positives."""
from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np


@dataclass(frozen=True)
class Window:
    low: float
    high: float
    positives: int          # judged positive among the samples
    judged: int
    coverage: float

    def as_tuple(self) -> tuple[float, float]:
        return (self.low, self.high)


def _weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    order = np.argsort(values)
    values, weights = values[order], weights[order]
    cumulative = (np.cumsum(weights) - 0.5 * weights) / weights.sum()
    return float(np.interp(q, cumulative, values))


def calibrate_window(similarity: np.ndarray, positive: np.ndarray, coverage: float = 0.95,
                     bin_weights: np.ndarray | None = None, min_positives: int = 5) -> Window:
    """Central interval holding `coverage` of the positives among judged sample pairs.

    `bin_weights` (optional, one per pair: the bin's population / samples drawn from it) turns the
    stratified sample back into an estimate over all pairs; without it, detected positives count
    equally, as in the reference method. Raises ValueError when too few positives were detected.
    """
    similarity = np.asarray(similarity, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    hits = similarity[positive]
    if len(hits) < min_positives:
        raise ValueError(f"only {len(hits)} positives among {len(similarity)} judged pairs "
                         f"(need {min_positives}) — cannot calibrate a window")
    weights = np.ones(len(hits)) if bin_weights is None else np.asarray(bin_weights, dtype=np.float64)[positive]
    tail = (1.0 - coverage) / 2.0
    low = _weighted_quantile(hits, weights, tail)
    high = _weighted_quantile(hits, weights, 1.0 - tail)
    # Rounded outwards, so the positives on the edges stay inside the window.
    return Window(math.floor(low * 1e4) / 1e4, math.ceil(high * 1e4) / 1e4, int(positive.sum()),
                  int(len(similarity)), coverage)
