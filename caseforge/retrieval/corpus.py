"""A corpus is an ordered list of (doc_id, text) pairs with a content fingerprint."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from caseforge.ranking import id_ranks


@dataclass(frozen=True)
class Corpus:
    name: str
    ids: tuple[str, ...]
    texts: tuple[str, ...]
    _cache: dict = field(default_factory=dict, compare=False, repr=False)
    # what the documents are, counted by kind (e.g. {"facts+question+conclusion": 205, "facts_only": 2812});
    # reported with every result, since it moves every number; empty when the source does not say
    composition: dict[str, int] = field(default_factory=dict, compare=False)

    @classmethod
    def from_pairs(cls, name: str, pairs: Iterable[tuple[str, str]],
                   composition: dict[str, int] | None = None) -> "Corpus":
        ids, texts = [], []
        for doc_id, text in pairs:
            ids.append(str(doc_id))
            texts.append(text or "")
        if len(set(ids)) != len(ids):
            seen, dupes = set(), set()
            for doc_id in ids:
                (dupes if doc_id in seen else seen).add(doc_id)
            raise ValueError(f"corpus {name!r}: duplicate doc ids {sorted(dupes)[:5]}")
        return cls(name, tuple(ids), tuple(texts), composition=dict(sorted((composition or {}).items())))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def fingerprint(self) -> str:
        """sha256 over every id and text in order: any change to the corpus changes it."""
        if "fingerprint" not in self._cache:
            digest = hashlib.sha256()
            for doc_id, text in zip(self.ids, self.texts):
                digest.update(doc_id.encode("utf-8"))
                digest.update(b"\x00")
                digest.update(text.encode("utf-8"))
                digest.update(b"\x01")
            self._cache["fingerprint"] = digest.hexdigest()
        return self._cache["fingerprint"]

    @property
    def tie_ranks(self) -> np.ndarray:
        """Each document's position in id order: how rankings break exact ties."""
        if "tie_ranks" not in self._cache:
            self._cache["tie_ranks"] = id_ranks(self.ids)
        return self._cache["tie_ranks"]

    def text_of(self, doc_id: str) -> str:
        return self.texts[self.ids.index(doc_id)]
