"""Choosing a hybrid fusion on tuning queries (a train split), never on the queries it is reported on.

Every fusion of a fixed grid (caseforge.retrieval.hybrid.Fusion: RRF with several k, min-max score fusion,
positive weights on a 0.1 simplex) is scored on the tuning queries by recall@k, k in `ks`. The chosen one
maximises the smallest margin over k between its recall@k and the best single part's recall@k (a fusion
should beat every retriever it combines at every k), then its mean recall; remaining ties go to the
earlier grid entry. Recall is computed from the parts' rankings exactly as HybridRetriever would fuse
them (same float operations, scores compared at caseforge.ranking's precision, ties by doc id), so the
choice does not depend on threads or machines beyond the rankings themselves.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from caseforge.ranking import SCORE_DECIMALS, stable_scores
from caseforge.retrieval.base import Hit
from caseforge.retrieval.hybrid import DEFAULT_DEPTH, Fusion

RRF_KS = (10, 30, 60, 100)
MAX_GOLD = 62                    # gold cases per query tracked in a bit mask


def fusion_grid(n_parts: int, depth: int = DEFAULT_DEPTH, step: float = 0.1,
                rrf_ks: tuple[int, ...] = RRF_KS) -> list[Fusion]:
    """Every fusion tried: positive weights summing to 1 in `step`s, for RRF (each k) and score fusion."""
    units = round(1 / step)
    weights = [tuple(round(u * step, 10) for u in combo)
               for combo in itertools.product(range(1, units), repeat=n_parts) if sum(combo) == units]
    if n_parts == 1:
        weights = [(1.0,)]
    grid = [Fusion("score", w, depth=depth) for w in weights]
    grid += [Fusion("rrf", w, k, depth) for k in rrf_ks for w in weights]
    return grid


@dataclass
class TuningResult:
    fusion: Fusion
    recall: dict[int, float]                         # the chosen fusion's recall@k on the tuning queries
    parts_recall: dict[str, dict[int, float]]        # each part's recall@k on the same queries
    margin: float                                    # min over k of recall@k minus the best part's
    n_queries: int
    tried: int
    table: list[tuple[Fusion, dict[int, float]]] = field(default_factory=list, repr=False)

    def describe(self) -> str:
        ks = sorted(self.recall)
        fused = "/".join(f"{self.recall[k]:.3f}" for k in ks)
        parts = "; ".join(f"{name} " + "/".join(f"{r[k]:.3f}" for k in ks) for name, r in self.parts_recall.items())
        return (f"tuned on {self.n_queries} claims over {self.tried} fusions: recall@{'/'.join(map(str, ks))} "
                f"{fused} vs {parts} (margin {self.margin:+.3f})")


class _Candidates:
    """The tuning queries' candidate documents (union of the parts' top-depth) as padded arrays."""

    def __init__(self, part_rankings: list[list[list[Hit]]], gold: list[list[frozenset[str]]],
                 denominators: list[int], depth: int):
        n_queries, n_parts = len(gold), len(part_rankings)
        per_query = []
        for q in range(n_queries):
            ids = sorted({doc for ranking in part_rankings for doc, _ in ranking[q][:depth]})
            per_query.append(ids)
        width = max((len(ids) for ids in per_query), default=0) or 1
        self.present = np.zeros((n_parts, n_queries, width), bool)
        self.normalised = np.zeros((n_parts, n_queries, width))
        self.rank = np.ones((n_parts, n_queries, width))
        self.valid = np.zeros((n_queries, width), bool)
        self.id_rank = np.zeros((n_queries, width), np.int64)      # position in id order: the tie-break
        self.gold_mask = np.zeros((n_queries, width), np.int64)
        self.denominators = np.asarray(denominators, float)
        for q, ids in enumerate(per_query):
            column = {doc: c for c, doc in enumerate(ids)}
            self.valid[q, :len(ids)] = True
            self.id_rank[q, :len(ids)] = np.arange(len(ids))
            for g, cases in enumerate(gold[q][:MAX_GOLD]):
                for doc in cases:
                    if doc in column:
                        self.gold_mask[q, column[doc]] |= 1 << g
            for p, ranking in enumerate(part_rankings):
                top = ranking[q][:depth]
                if not top:
                    continue
                scores = stable_scores([s for _, s in top])
                low, high = float(scores.min()), float(scores.max())
                span = high - low
                for rank, ((doc, _), score) in enumerate(zip(top, scores), start=1):
                    c = column[doc]
                    self.present[p, q, c] = True
                    self.rank[p, q, c] = rank
                    self.normalised[p, q, c] = (float(score) - low) / span if span > 0 else 1.0

    def recall(self, fusion: Fusion, ks: tuple[int, ...]) -> dict[int, float]:
        fused = np.zeros(self.valid.shape)
        weights = fusion.weights or tuple(1.0 for _ in range(len(self.present)))
        for p, weight in enumerate(weights):
            if fusion.method == "rrf":
                value = weight / (fusion.rrf_k + self.rank[p])
            else:
                value = weight * self.normalised[p]
            fused = fused + np.where(self.present[p], value, 0.0)
        return self._recall(np.where(self.valid, np.round(fused, SCORE_DECIMALS), -np.inf), ks)

    def part_recall(self, p: int, ks: tuple[int, ...]) -> dict[int, float]:
        return self._recall(np.where(self.present[p], -self.rank[p], -np.inf), ks)

    def _recall(self, scores: np.ndarray, ks: tuple[int, ...]) -> dict[int, float]:
        order = np.lexsort((self.id_rank, -scores), axis=-1)[:, :max(ks)]
        masks = np.take_along_axis(np.where(np.isfinite(scores), self.gold_mask, 0), order, axis=1)
        result = {}
        for k in ks:
            found = np.bitwise_count(np.bitwise_or.reduce(masks[:, :k], axis=1))
            result[k] = float(np.mean(found / self.denominators)) if len(found) else 0.0
        return result


def tune_fusion(part_names: list[str], part_rankings: list[list[list[Hit]]], gold: list[list[frozenset[str]]],
                denominators: list[int] | None = None, ks: tuple[int, ...] = (1, 5, 10),
                grid: list[Fusion] | None = None) -> TuningResult:
    """Pick the fusion of `grid` (default fusion_grid) that best beats every part on the tuning queries.

    part_rankings[p][q]: part p's ranking for query q (at least the fusion depth, best first);
    gold[q]: query q's gold cases (each a set of doc ids); denominators[q]: how many gold cases it has in
    all (default len(gold[q])), so cases absent from the corpus still count as not found."""
    if not gold:
        raise ValueError("fusion tuning needs at least one tuning query with gold cases")
    if any(len(r) != len(gold) for r in part_rankings):
        raise ValueError("fusion tuning: every part needs one ranking per tuning query")
    grid = grid or fusion_grid(len(part_rankings))
    depth = max(f.depth for f in grid)
    if any(f.depth != depth for f in grid):
        raise ValueError("fusion tuning: every fusion of the grid must use the same depth")
    candidates = _Candidates(part_rankings, gold, denominators or [len(g) for g in gold], depth)
    parts = {name: candidates.part_recall(p, ks) for p, name in enumerate(part_names)}
    best_part = {k: max(r[k] for r in parts.values()) for k in ks}
    table, best, best_key = [], None, None
    for fusion in grid:
        recall = candidates.recall(fusion, ks)
        table.append((fusion, recall))
        margin = round(min(recall[k] - best_part[k] for k in ks), SCORE_DECIMALS)
        key = (margin, round(float(np.mean(list(recall.values()))), SCORE_DECIMALS))
        if best_key is None or key > best_key:
            best, best_key = (fusion, recall, margin), key
    fusion, recall, margin = best
    return TuningResult(fusion, recall, parts, margin, len(gold), len(grid), table)
