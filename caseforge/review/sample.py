"""The stratified sample of a build's items pushed for review: strata by label, score band and source year; a
size and a seed from the settings. Which items are drawn depends on the items and the seed alone (each item's
place is the sha256 of the seed and its id), never on row order, thread counts or the clock."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    item_id: str
    label: str
    band: str
    year: int | None
    judge: dict[str, str]          # the judge's verdict: field -> value (hidden from the annotators)
    data: dict[str, str]           # what the annotator is shown

    @property
    def stratum(self) -> str:
        return " | ".join((self.label or "-", self.band or "-", str(self.year) if self.year else "undated"))


def _place(seed: int, item_id: str) -> str:
    return hashlib.sha256(f"{seed}\x00{item_id}".encode()).hexdigest()


def stratified_sample(items: list[Item], size: int, seed: int) -> list[Item]:
    """`size` items (all of them when fewer), spread over the strata in proportion to their sizes (largest
    remainders), every stratum getting at least one while the size allows; within a stratum, the first by
    place. Returned in place order."""
    if size >= len(items):
        chosen = list(items)
    else:
        strata: dict[str, list[Item]] = {}
        for item in sorted(items, key=lambda i: _place(seed, i.item_id)):
            strata.setdefault(item.stratum, []).append(item)
        names = sorted(strata, key=lambda s: (-len(strata[s]), s))
        quota = {s: 0 for s in names}
        for name in names[:size]:                   # one each, largest strata first, while the size allows
            quota[name] = 1
        left = size - sum(quota.values())
        if left > 0:
            spare = {s: len(strata[s]) - quota[s] for s in names}
            total = sum(spare.values())
            shares = {s: left * spare[s] / total for s in names}
            for s in names:
                quota[s] += int(shares[s])
            rest = size - sum(quota.values())
            for s in sorted(names, key=lambda s: (-(shares[s] - int(shares[s])), s))[:rest]:
                quota[s] += 1
        chosen = [item for s in names for item in strata[s][:quota[s]]]
    return sorted(chosen, key=lambda i: _place(seed, i.item_id))
