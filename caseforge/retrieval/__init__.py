"""Retrieval toolkit shared by the pipelines: BM25, query likelihood, dense and hybrid search.

Every retriever is built over a `Corpus` of (doc_id, text) pairs and answers
`search(queries, k) -> list[list[(doc_id, score)]]`, best first. Indexes persist to a folder and
are rebuilt when the corpus fingerprint (hash of ids and texts) or the parameters change.
"""
from caseforge.retrieval.base import Hit, Retriever
from caseforge.retrieval.corpus import Corpus
from caseforge.retrieval.factory import RETRIEVERS, build_retriever, default_index_dir

__all__ = ["Corpus", "Hit", "RETRIEVERS", "Retriever", "build_retriever", "default_index_dir"]
