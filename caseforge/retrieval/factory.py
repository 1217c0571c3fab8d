"""Build or load a named retriever for a corpus, persisting its index under a folder."""
from __future__ import annotations

import logging
from pathlib import Path

from caseforge.retrieval.base import Retriever
from caseforge.retrieval.bm25 import BM25Retriever
from caseforge.retrieval.corpus import Corpus
from caseforge.retrieval.dense import DenseRetriever
from caseforge.retrieval.hybrid import DEFAULT_RRF_K, Fusion, HybridRetriever
from caseforge.retrieval.qlm import DEFAULT_MU, QueryLikelihoodRetriever
from caseforge.settings import PROJECT_ROOT

log = logging.getLogger(__name__)

RETRIEVERS = ("bm25", "qlm", "dense", "hybrid")
HYBRID_PARTS = ("bm25", "dense")


def default_index_dir(corpus_name: str, retriever: str) -> Path:
    return PROJECT_ROOT / "data" / "indexes" / corpus_name / retriever


def _make(name: str, corpus: Corpus, mu: float, dense_model: str | None, stemmer: str | None = None) -> Retriever:
    if name == "bm25":
        return BM25Retriever(corpus, stemmer=stemmer)
    if name == "qlm":
        return QueryLikelihoodRetriever(corpus, mu=mu, stemmer=stemmer)
    if name == "dense":
        return DenseRetriever(corpus, model_path=dense_model)
    raise ValueError(f"unknown retriever {name!r} (choose from {', '.join(RETRIEVERS)})")


def _persisted(retriever: Retriever, folder: Path | None) -> Retriever:
    if folder is None:
        return retriever.build()
    if retriever.is_current(folder):
        log.info("%s index for %s is current in %s", retriever.name, retriever.corpus.name, folder)
        return retriever.load(folder)
    log.info("building %s index for %s (%d docs) in %s", retriever.name, retriever.corpus.name,
             len(retriever.corpus), folder)
    retriever.build()
    retriever.save(folder)
    return retriever


def build_retriever(name: str, corpus: Corpus, index_root: Path | str | None = None, *, persist: bool = True,
                    mu: float = DEFAULT_MU, rrf_k: int = DEFAULT_RRF_K, dense_model: str | None = None,
                    hybrid_parts: tuple[str, ...] = HYBRID_PARTS, stemmer: str | None = None,
                    fusion: Fusion | None = None) -> Retriever:
    """The retriever `name` over `corpus`, loaded from its index folder when current, else built and saved.

    index_root: folder holding <corpus>/<retriever>/ (default data/indexes); persist=False keeps it in memory.
    stemmer: None (surface forms, the default here) or "english" (Snowball) for the lexical retrievers;
    each setting keeps its own index folder (<retriever>-<stemmer>).
    fusion: how hybrid combines its parts (default: reciprocal rank fusion with `rrf_k`, equal weights).
    """
    def folder(kind: str) -> Path | None:
        if not persist:
            return None
        if stemmer and kind in ("bm25", "qlm"):
            kind = f"{kind}-{stemmer}"
        if index_root is None:
            return default_index_dir(corpus.name, kind)
        return Path(index_root) / corpus.name / kind

    if name == "hybrid":
        parts = [_persisted(_make(p, corpus, mu, dense_model, stemmer), folder(p)) for p in hybrid_parts]
        hybrid = HybridRetriever(corpus, parts, rrf_k=rrf_k, fusion=fusion)
        if persist:
            hybrid.save(folder("hybrid"))
        return hybrid
    return _persisted(_make(name, corpus, mu, dense_model, stemmer), folder(name))
