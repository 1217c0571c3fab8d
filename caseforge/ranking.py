"""Rankings that come out the same on every machine.

Whatever feeds an LLM request (retrieved passages, selected documents, sampled pairs) must not
depend on the processor, the thread count or the order rows arrived in. Two rules:

1. Scores are compared at `SCORE_DECIMALS` decimals, in float64. Mathematically equal scores that
   another summation order, SIMD kernel or BLAS thread split leaves a few ulps apart (1e-16
   relative in float64) become exactly equal; a real difference of 1e-9 or more survives.
2. Exact ties are broken by a stable key — a document's id, never its position in an array that a
   partition or sort kernel happened to produce (numpy's AVX-512 and AVX2 `argpartition` keep
   different members of a tie).

What rounding cannot do: make two *different* values that sit within float noise of each other
compare the same everywhere. Inputs computed in float32 by a neural model on another CPU can move
by ~1e-7; such near-ties are rare at the top of a ranking and are not claimed to be stable.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

SCORE_DECIMALS = 9


def stable_scores(scores) -> np.ndarray:
    """float64 scores rounded to SCORE_DECIMALS."""
    return np.round(np.asarray(scores, dtype=np.float64), SCORE_DECIMALS)


def id_ranks(ids: Sequence[str]) -> np.ndarray:
    """Position of each id in sorted order: the tie-break key, independent of the order given."""
    ranks = np.empty(len(ids), dtype=np.int64)
    ranks[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    return ranks


def top_k_indices(scores, tie_ranks: np.ndarray, k: int, largest: bool = True) -> np.ndarray:
    """Indices of the k best scores (highest, or lowest with largest=False), best first, ties by tie_ranks.

    Every index whose rounded score equals the k-th best is a candidate; the tie-break then picks
    among them, so which tied rows a partition kernel would have kept never matters.
    """
    values = stable_scores(scores)
    if not largest:
        values = -values
    values = np.where(np.isnan(values), -np.inf, values)     # NaN is never among the best
    n = len(values)
    k = min(int(k), n)
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if k < n:
        kth = np.partition(values, n - k)[n - k]     # the k-th largest value (a value, not an index)
        candidates = np.flatnonzero(values >= kth)
    else:
        candidates = np.arange(n)
    order = np.lexsort((tie_ranks[candidates], -values[candidates]))
    return candidates[order][:k]


def stable_order(scores, tie_ranks: np.ndarray, largest: bool = True) -> np.ndarray:
    """Every index, best score first, ties by tie_ranks."""
    return top_k_indices(scores, tie_ranks, len(tie_ranks), largest)
