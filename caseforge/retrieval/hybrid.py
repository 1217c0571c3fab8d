"""Hybrid retrieval: reciprocal rank fusion of several retrievers' rankings.

RRF score of a document = Σ_r 1 / (k_rrf + rank_r(d)), rank starting at 1, over the retrievers
that returned it in their top `depth`. Fused scores are compared at caseforge.ranking's precision
and ties go to the smaller doc id.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from caseforge.ranking import stable_order, stable_scores
from caseforge.retrieval.base import Hit, Retriever
from caseforge.retrieval.corpus import Corpus

DEFAULT_RRF_K = 60
DEFAULT_DEPTH = 100


def reciprocal_rank_fusion(rankings: list[list[Hit]], rrf_k: int = DEFAULT_RRF_K) -> list[Hit]:
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, (doc_id, _score) in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (rrf_k + rank)
    ids = sorted(fused)
    order = stable_order([fused[d] for d in ids], np.arange(len(ids)))
    rounded = stable_scores([fused[d] for d in ids])
    return [(ids[i], float(rounded[i])) for i in order]


class HybridRetriever(Retriever):
    name = "hybrid"

    def __init__(self, corpus: Corpus, parts: list[Retriever], rrf_k: int = DEFAULT_RRF_K,
                 depth: int = DEFAULT_DEPTH):
        super().__init__(corpus)
        if not parts:
            raise ValueError("hybrid: needs at least one retriever to fuse")
        self.parts, self.rrf_k, self.depth = parts, rrf_k, depth

    def params(self) -> dict:
        return {"rrf_k": self.rrf_k, "depth": self.depth, "parts": [p.name for p in self.parts]}

    def build(self) -> "HybridRetriever":
        return self

    def search(self, queries: list[str], k: int = 10) -> list[list[Hit]]:
        depth = max(self.depth, k)
        per_part = [part.search(queries, depth) for part in self.parts]
        return [reciprocal_rank_fusion([rankings[i] for rankings in per_part], self.rrf_k)[:k]
                for i in range(len(queries))]

    def save(self, folder: Path) -> None:
        self.write_manifest(folder)

    def load(self, folder: Path) -> "HybridRetriever":
        return self
