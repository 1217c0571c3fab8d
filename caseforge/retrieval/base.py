"""The retriever interface and the persistence manifest every index folder carries."""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path

import numpy as np

from caseforge.ranking import id_ranks, stable_scores, top_k_indices
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

    def describe(self) -> str:
        """One line naming the retriever and its parameters, printed with results."""
        params = ", ".join(f"{k} {v}" for k, v in sorted(self.params().items()))
        return f"{self.name} ({params})" if params else self.name

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


def top_k_rows(scores: np.ndarray, ids: tuple[str, ...], k: int,
               tie_ranks: np.ndarray | None = None) -> list[list[Hit]]:
    """Best-first top-k per row of a (queries × docs) score matrix; equal scores (at
    caseforge.ranking's precision) go by doc id, so neither corpus order nor the CPU decides."""
    ranks = id_ranks(ids) if tie_ranks is None else tie_ranks
    results = []
    for row in np.atleast_2d(scores):
        rounded = stable_scores(row)
        results.append([(ids[i], float(rounded[i])) for i in top_k_indices(rounded, ranks, k)])
    return results
