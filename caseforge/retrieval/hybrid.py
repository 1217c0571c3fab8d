"""Hybrid retrieval: fusion of several retrievers' rankings.

Two ways to fuse the top `depth` documents of each part:

- `rrf` (reciprocal rank fusion): score(d) = Σ_r w_r / (k_rrf + rank_r(d)), rank starting at 1, over the
  parts that returned d;
- `score`: score(d) = Σ_r w_r · s_r(d), where s_r is part r's score min-max normalised over its own top
  `depth` for that query (1 for its best, 0 for its depth-th), and 0 for a document it did not return.

Weights default to equal. Fused scores are compared at caseforge.ranking's precision and ties go to the
smaller doc id, so a fusion is as machine-independent as the rankings it fuses.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from caseforge.ranking import stable_order, stable_scores
from caseforge.retrieval.base import Hit, Retriever
from caseforge.retrieval.corpus import Corpus

DEFAULT_RRF_K = 60
DEFAULT_DEPTH = 100
FUSION_METHODS = ("rrf", "score")


@dataclass(frozen=True)
class Fusion:
    """How a hybrid retriever combines its parts' rankings (see the module docstring)."""
    method: str = "rrf"
    weights: tuple[float, ...] = ()          # one per part; empty = equal weights
    rrf_k: int = DEFAULT_RRF_K
    depth: int = DEFAULT_DEPTH

    def __post_init__(self):
        if self.method not in FUSION_METHODS:
            raise ValueError(f"unknown fusion {self.method!r} (choose from {', '.join(FUSION_METHODS)})")
        if any(w < 0 for w in self.weights) or (self.weights and not any(self.weights)):
            raise ValueError(f"fusion weights must be non-negative and not all zero, got {self.weights}")

    def params(self) -> dict:
        params = asdict(self)
        params["weights"] = list(self.weights)
        if self.method != "rrf":
            params.pop("rrf_k")
        return params

    def describe(self, parts: list[str]) -> str:
        weights = self.weights or tuple(1.0 for _ in parts)
        mixed = " + ".join(f"{w:g}·{p}" for w, p in zip(weights, parts))
        how = f"RRF k={self.rrf_k}" if self.method == "rrf" else "min-max normalised scores"
        return f"{how}, {mixed}, depth {self.depth}"


def reciprocal_rank_fusion(rankings: list[list[Hit]], rrf_k: int = DEFAULT_RRF_K,
                           weights: tuple[float, ...] = ()) -> list[Hit]:
    fused: dict[str, float] = {}
    for r, ranking in enumerate(rankings):
        weight = weights[r] if weights else 1.0
        for rank, (doc_id, _score) in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + weight / (rrf_k + rank)
    return _ordered(fused)


def score_fusion(rankings: list[list[Hit]], weights: tuple[float, ...] = ()) -> list[Hit]:
    fused: dict[str, float] = {}
    for r, ranking in enumerate(rankings):
        if not ranking:
            continue
        weight = weights[r] if weights else 1.0
        scores = stable_scores([s for _, s in ranking])
        low, high = float(scores.min()), float(scores.max())
        span = high - low
        for (doc_id, _), score in zip(ranking, scores):
            normalised = (float(score) - low) / span if span > 0 else 1.0
            fused[doc_id] = fused.get(doc_id, 0.0) + weight * normalised
    return _ordered(fused)


def fuse(rankings: list[list[Hit]], fusion: Fusion) -> list[Hit]:
    """Each part's ranking (its top `fusion.depth`, best first) → the fused ranking, best first."""
    if fusion.method == "rrf":
        return reciprocal_rank_fusion(rankings, fusion.rrf_k, fusion.weights)
    return score_fusion(rankings, fusion.weights)


def _ordered(fused: dict[str, float]) -> list[Hit]:
    ids = sorted(fused)
    order = stable_order([fused[d] for d in ids], np.arange(len(ids)))
    rounded = stable_scores([fused[d] for d in ids])
    return [(ids[i], float(rounded[i])) for i in order]


class HybridRetriever(Retriever):
    name = "hybrid"

    def __init__(self, corpus: Corpus, parts: list[Retriever], rrf_k: int = DEFAULT_RRF_K,
                 depth: int = DEFAULT_DEPTH, fusion: Fusion | None = None):
        super().__init__(corpus)
        if not parts:
            raise ValueError("hybrid: needs at least one retriever to fuse")
        self.parts = parts
        self.fusion = fusion or Fusion("rrf", (), rrf_k, depth)
        if self.fusion.weights and len(self.fusion.weights) != len(parts):
            raise ValueError(f"hybrid: {len(self.fusion.weights)} fusion weights for {len(parts)} retrievers")
        self.rrf_k, self.depth = self.fusion.rrf_k, self.fusion.depth

    def params(self) -> dict:
        return {**self.fusion.params(), "parts": [p.name for p in self.parts]}

    def describe(self) -> str:
        return (f"hybrid of {', '.join(p.describe() for p in self.parts)}; fusion: "
                + self.fusion.describe([p.name for p in self.parts]))

    def build(self) -> "HybridRetriever":
        return self

    def search(self, queries: list[str], k: int = 10) -> list[list[Hit]]:
        depth = max(self.fusion.depth, k)
        per_part = [part.search(queries, depth) for part in self.parts]
        return [fuse([rankings[i] for rankings in per_part], self.fusion)[:k] for i in range(len(queries))]

    def save(self, folder: Path) -> None:
        self.write_manifest(folder)

    def load(self, folder: Path) -> "HybridRetriever":
        return self
