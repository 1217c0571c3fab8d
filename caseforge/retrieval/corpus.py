"""A corpus is an ordered list of (doc_id, text) pairs with a content fingerprint."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Iterable


@dataclass(frozen=True)
class Corpus:
    name: str
    ids: tuple[str, ...]
    texts: tuple[str, ...]
    _fingerprint: list = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def from_pairs(cls, name: str, pairs: Iterable[tuple[str, str]]) -> "Corpus":
        ids, texts = [], []
        for doc_id, text in pairs:
            ids.append(str(doc_id))
            texts.append(text or "")
        if len(set(ids)) != len(ids):
            seen, dupes = set(), set()
            for doc_id in ids:
                (dupes if doc_id in seen else seen).add(doc_id)
            raise ValueError(f"corpus {name!r}: duplicate doc ids {sorted(dupes)[:5]}")
        return cls(name, tuple(ids), tuple(texts))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def fingerprint(self) -> str:
        """sha256 over every id and text in order: any change to the corpus changes it."""
        if not self._fingerprint:
            digest = hashlib.sha256()
            for doc_id, text in zip(self.ids, self.texts):
                digest.update(doc_id.encode("utf-8"))
                digest.update(b"\x00")
                digest.update(text.encode("utf-8"))
                digest.update(b"\x01")
            self._fingerprint.append(digest.hexdigest())
        return self._fingerprint[0]

    def text_of(self, doc_id: str) -> str:
        return self.texts[self.ids.index(doc_id)]
