"""Claim embeddings: sentence-transformers from a local model folder, or feature hashing (no model); and stage 4,
the kept claims embedded into build.casefacts_embeddings."""
from __future__ import annotations

import hashlib
import re

import numpy as np
import pandas as pd

from caseforge.embeddings import SentenceTransformerEmbedder
from caseforge.tasks.casefacts.context import BuildContext, load_stage

_TOKEN = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Word and word-pair feature hashing into `dim` dimensions, unit length. Model-free and deterministic."""

    def __init__(self, dim: int = 384):
        self.dim = dim
        self.name = f"hashing-{dim}"

    def _index(self, feature: str) -> int:
        return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=4).digest(), "little") % self.dim

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _TOKEN.findall(text.lower())
            for feature in words + [a + " " + b for a, b in zip(words, words[1:])]:
                out[row, self._index(feature)] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


def get_embedder(kind: str, path: str | None = None):
    if kind == "sentence-transformers":
        return SentenceTransformerEmbedder(path, "--embedder-path PATH")
    if kind == "hashing":
        return HashingEmbedder()
    raise ValueError(f"unknown embedder {kind!r}; choose sentence-transformers or hashing")


def embed_claims(ctx: BuildContext, kept: pd.DataFrame) -> np.ndarray:
    vectors = ctx.embedder.encode(kept["claim"].tolist()) if len(kept) else np.zeros((0, 384), np.float32)
    frame = pd.DataFrame({"claim_id": kept["claim_id"], "model": ctx.embedder.name,
                          "vector": [v.tolist() for v in vectors]})
    load_stage(ctx, "embeddings", frame, "claim_id")
    return vectors
