"""The retriever interface and the persistence manifest every index folder carries."""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path

import numpy as np

from caseforge.retrieval.corpus import Corpus

Hit = tuple[str, float]
MANIFEST = "manifest.json"


class Retriever(ABC):
    """Search a corpus: `search(queries, k)` → for each query, up to k (doc_id, score) best first."""

    name: str = "retriever"

    def __init__(self, corpus: Corpus):
        self.corpus = corpus

    def params(self) -> dict:
        return {}

    @abstractmethod
    def search(self, queries: list[str], k: int = 10) -> list[list[Hit]]: ...

    # persistence: subclasses write/read their arrays; the manifest says what they were built from
    def manifest(self) -> dict:
        return {"retriever": self.name, "corpus": self.corpus.name, "fingerprint": self.corpus.fingerprint,
                "n_docs": len(self.corpus), "params": self.params()}

    def is_current(self, folder: Path) -> bool:
        path = Path(folder) / MANIFEST
        if not path.exists():
            return False
        try:
            return json.loads(path.read_text()) == self.manifest()
        except json.JSONDecodeError:
            return False

    def write_manifest(self, folder: Path) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / MANIFEST).write_text(json.dumps(self.manifest(), indent=1, sort_keys=True))


def top_k_rows(scores: np.ndarray, ids: tuple[str, ...], k: int) -> list[list[Hit]]:
    """Best-first top-k per row of a (queries × docs) score matrix; ties broken by corpus order."""
    n_docs = scores.shape[1]
    k = min(k, n_docs)
    results = []
    if k <= 0:
        return [[] for _ in range(scores.shape[0])]
    for row in scores:
        if k < n_docs:
            part = np.argpartition(-row, k - 1)[:k]
        else:
            part = np.arange(n_docs)
        order = part[np.lexsort((part, -row[part]))]
        results.append([(ids[i], float(row[i])) for i in order])
    return results
