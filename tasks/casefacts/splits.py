"""Splits by fact_id: a claim and its negation share one; one of each pair is kept; no fact_id crosses splits."""
from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    claim_id: str
    fact_id: str
    label: str


def keep_one_per_fact(candidates: list[Candidate], seed: int) -> list[Candidate]:
    """Of each fact_id's claims (a statement and its negation) keep one, chosen at random with `seed`."""
    by_fact: dict[str, list[Candidate]] = {}
    for c in candidates:
        by_fact.setdefault(c.fact_id, []).append(c)
    rng = random.Random(seed)
    kept = []
    for fact_id in sorted(by_fact):
        options = sorted(by_fact[fact_id], key=lambda c: c.claim_id)
        kept.append(options[rng.randrange(len(options))])
    return kept


def assign_splits(fact_ids: list[str], test_fraction: float, seed: int) -> dict[str, str]:
    """fact_id → 'train' | 'test'; the test share is rounded, at least one fact when any and fraction > 0."""
    unique = sorted(set(fact_ids))
    random.Random(seed).shuffle(unique)
    n_test = round(len(unique) * test_fraction)
    if test_fraction > 0 and unique and n_test == 0:
        n_test = 1
    return {fid: ("test" if i < n_test else "train") for i, fid in enumerate(unique)}
