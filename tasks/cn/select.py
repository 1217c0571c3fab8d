"""Representative selection: embed kept documents, cluster with K-Means, pick N across clusters.

Embedders (the `embedder` setting):
- `sentence-transformers:<local path>` — a Chinese sentence model (e.g. BGE-base-zh) loaded
  from a local folder only; nothing is downloaded.
- `tfidf-char` — the offline fallback: character 1–2-gram TF-IDF reduced by truncated SVD
  (no model, deterministic for a seed).
Selection is seeded and reproducible: same documents, embedder, k, n and seed give the same picks,
also on another machine: the numerical work runs on one BLAS/OpenMP thread (scikit-learn's K-Means
adds per-thread partial sums in whatever order threads finish), clusters are numbered by their
smallest doc id rather than by K-Means' label order, and distances are compared at
caseforge.ranking's precision with ties going to the smaller doc id.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from caseforge.ranking import id_ranks, stable_order, stable_scores

TFIDF = "tfidf-char"
ST_PREFIX = "sentence-transformers:"
EMBED_FIELDS = ("claims", "defense", "facts")
MAX_EMBED_CHARS = 2000


class EmbedderError(ValueError):
    """The embedder setting names something that cannot be used here."""


@dataclass(frozen=True)
class Pick:
    doc_id: str
    cluster: int
    distance: float
    rank_in_cluster: int
    cluster_size: int


def embed_text(doc: dict) -> str:
    """What the embedder reads: claims, defense and facts (the full text when all are missing)."""
    parts = [doc.get(name) or "" for name in EMBED_FIELDS]
    text = "\n".join(p for p in parts if p) or (doc.get("full_text") or "")
    return text[:MAX_EMBED_CHARS]


def embed(texts: list[str], embedder: str, seed: int = 0, dims: int = 128) -> np.ndarray:
    """L2-normalised embeddings, one row per text."""
    if embedder == TFIDF:
        with threadpool_limits(1):
            vectors = _tfidf_svd(texts, seed, dims)
    elif embedder.startswith(ST_PREFIX):
        vectors = _sentence_transformers(texts, embedder[len(ST_PREFIX):])
    else:
        raise EmbedderError(f"embedder {embedder!r}: use '{TFIDF}' or '{ST_PREFIX}<local model folder>'")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def _tfidf_svd(texts: list[str], seed: int, dims: int) -> np.ndarray:
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    matrix = TfidfVectorizer(analyzer="char", ngram_range=(1, 2), min_df=1, sublinear_tf=True).fit_transform(texts)
    components = min(dims, matrix.shape[1] - 1, matrix.shape[0] - 1)
    if components < 1:
        return matrix.toarray().astype(np.float64)
    return TruncatedSVD(n_components=components, random_state=seed).fit_transform(matrix)


def _sentence_transformers(texts: list[str], model_path: str) -> np.ndarray:
    path = Path(os.path.expanduser(model_path))
    if not model_path or not path.is_dir():
        raise EmbedderError(f"embedder setting '{ST_PREFIX}{model_path}': no model folder at {path} "
                            f"(give a local path to a sentence-transformers model such as BGE-base-zh, "
                            f"or use '{TFIDF}')")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbedderError(f"embedder setting '{ST_PREFIX}{model_path}': sentence-transformers is not installed") from exc
    model = SentenceTransformer(str(path), local_files_only=True)
    return np.asarray(model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False),
                      dtype=np.float64)


def kmeans(vectors: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(labels, centroids) by scikit-learn's KMeans with a fixed seed, on one thread."""
    from sklearn.cluster import KMeans

    with threadpool_limits(1):
        model = KMeans(n_clusters=k, random_state=seed, n_init=10).fit(vectors)
    return model.labels_, model.cluster_centers_


def canonical_labels(labels: np.ndarray, tie_ranks: np.ndarray) -> np.ndarray:
    """Renumber clusters 0.. in the order of each cluster's smallest tie rank (doc id)."""
    first = {}
    for label, rank in zip(labels.tolist(), tie_ranks.tolist()):
        first[label] = min(rank, first.get(label, rank))
    number = {label: n for n, label in enumerate(sorted(first, key=first.get))}
    return np.array([number[label] for label in labels.tolist()], dtype=np.int64)


def quotas(sizes: list[int], n: int) -> list[int]:
    """Spread n picks as evenly as possible over clusters, never more than a cluster holds."""
    share = [0] * len(sizes)
    left = min(n, sum(sizes))
    order = sorted(range(len(sizes)), key=lambda c: (-sizes[c], c))
    while left:
        for cluster in order:
            if left and share[cluster] < sizes[cluster]:
                share[cluster] += 1
                left -= 1
    return share


def select_representatives(doc_ids: list[str], vectors: np.ndarray, n: int, k: int, seed: int) -> list[Pick]:
    """N documents across K clusters: in each cluster the ones nearest to its centroid."""
    if len(doc_ids) != len(vectors):
        raise ValueError("one embedding per document is needed")
    if not doc_ids or n <= 0:
        return []
    k = max(1, min(k, len(doc_ids)))
    labels, centroids = kmeans(vectors, k, seed)
    distances = stable_scores(np.linalg.norm(vectors - centroids[labels], axis=1))
    ranks = id_ranks(doc_ids)
    labels = canonical_labels(labels, ranks)
    k = int(labels.max()) + 1
    members = [[int(i) for i in members[stable_order(distances[members], ranks[members], largest=False)]]
               for members in (np.flatnonzero(labels == c) for c in range(k))]
    picks = []
    for cluster, quota in enumerate(quotas([len(m) for m in members], n)):
        for rank, index in enumerate(members[cluster][:quota]):
            picks.append(Pick(doc_ids[index], cluster, float(distances[index]), rank, len(members[cluster])))
    return picks
