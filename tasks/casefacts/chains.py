"""Overlap groups: connected claims are merged together, around their most similar pair."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OverlapGroup:
    claim_ids: tuple[str, ...]
    anchor: tuple[str, str]          # the most similar detected pair in the group
    anchor_similarity: float


def overlap_groups(pairs: list[tuple[str, str, float]]) -> list[OverlapGroup]:
    """Connected components of the detected-overlap graph; a pair is (claim_a, claim_b, similarity)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b, _ in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    members: dict[str, list[str]] = {}
    for node in parent:
        members.setdefault(find(node), []).append(node)
    best: dict[str, tuple[float, str, str]] = {}
    for a, b, sim in sorted(pairs, key=lambda p: (-p[2], *sorted(p[:2]))):
        best.setdefault(find(a), (sim, *sorted((a, b))))
    groups = []
    for root, ids in members.items():
        sim, a, b = best[root]
        groups.append(OverlapGroup(tuple(sorted(ids)), (a, b), float(sim)))
    return sorted(groups, key=lambda g: g.claim_ids)
