"""Query likelihood with Dirichlet smoothing, scored with sparse matrices.

    log P(q | d) = Σ_w c(w, q) · log( (c(w, d) + μ·P(w | C)) / (|d| + μ) )

Query words absent from the whole collection are skipped (P(w | C) = 0 would make every document
-inf). The sum splits into a part shared by every document that does not contain w and a sparse
correction for those that do, so one sparse product scores a whole batch of queries:

    score = Q·log(μ·p)  −  |q|·log(|d| + μ)  +  Q·L,   L[d, w] = log(1 + c(w, d) / (μ·p_w))
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from caseforge.retrieval.base import Hit, Retriever, top_k_rows
from caseforge.retrieval.corpus import Corpus
from caseforge.retrieval.tokenize import tokenize

DEFAULT_MU = 2000.0
QUERY_BATCH = 256


class QueryLikelihoodRetriever(Retriever):
    name = "qlm"

    def __init__(self, corpus: Corpus, mu: float = DEFAULT_MU, stemmer: str | None = None):
        super().__init__(corpus)
        if mu <= 0:
            raise ValueError(f"qlm: mu must be positive, got {mu}")
        self.mu = float(mu)
        self.stemmer = stemmer
        tokenize("check", stemmer)                 # an unknown stemmer fails here
        self.vocab: dict[str, int] = {}
        self.doc_lengths = np.zeros(0)
        self.log_mu_p = np.zeros(0)
        self.correction = sp.csr_matrix((0, 0))

    def params(self) -> dict:
        return {"mu": self.mu, **({"stemmer": self.stemmer} if self.stemmer else {})}

    def build(self) -> "QueryLikelihoodRetriever":
        rows, cols, vals = [], [], []
        for d, text in enumerate(self.corpus.texts):
            for token, count in Counter(tokenize(text, self.stemmer)).items():
                rows.append(d)
                cols.append(self.vocab.setdefault(token, len(self.vocab)))
                vals.append(count)
        counts = sp.csr_matrix((np.asarray(vals, dtype=np.float64), (rows, cols)),
                               shape=(len(self.corpus), len(self.vocab)))
        self._from_counts(counts)
        return self

    def _from_counts(self, counts: sp.csr_matrix) -> None:
        self.doc_lengths = np.asarray(counts.sum(axis=1)).ravel()
        collection = np.asarray(counts.sum(axis=0)).ravel()
        total = collection.sum()
        p_collection = collection / total if total else collection
        mu_p = self.mu * p_collection
        self.log_mu_p = np.log(mu_p, where=mu_p > 0, out=np.full_like(mu_p, -np.inf))
        correction = counts.copy().tocsr()
        correction.data = np.log1p(correction.data / mu_p[correction.indices])
        self.correction = correction
        self._counts = counts

    def query_matrix(self, queries: list[str]) -> sp.csr_matrix:
        rows, cols, vals = [], [], []
        for q, query in enumerate(queries):
            for token, count in Counter(tokenize(query, self.stemmer)).items():
                col = self.vocab.get(token)
                if col is not None:
                    rows.append(q)
                    cols.append(col)
                    vals.append(count)
        return sp.csr_matrix((np.asarray(vals, dtype=np.float64), (rows, cols)),
                             shape=(len(queries), len(self.vocab)))

    def score(self, queries: list[str]) -> np.ndarray:
        """Full log-likelihood matrix (queries × docs); a query with no known word scores 0 everywhere."""
        q = self.query_matrix(queries)
        query_len = np.asarray(q.sum(axis=1)).ravel()
        shared = q @ np.where(np.isfinite(self.log_mu_p), self.log_mu_p, 0.0)
        length_norm = np.outer(query_len, np.log(self.doc_lengths + self.mu))
        sparse_part = (q @ self.correction.T).toarray()
        return shared[:, None] - length_norm + sparse_part

    def search(self, queries: list[str], k: int = 10) -> list[list[Hit]]:
        results: list[list[Hit]] = []
        for start in range(0, len(queries), QUERY_BATCH):
            results.extend(top_k_rows(self.score(queries[start:start + QUERY_BATCH]), self.corpus.ids, k,
                                       self.corpus.tie_ranks))
        return results

    def save(self, folder: Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        sp.save_npz(folder / "counts.npz", self._counts)
        tokens = sorted(self.vocab, key=self.vocab.get)
        (folder / "vocab.txt").write_text("\n".join(tokens), encoding="utf-8")
        self.write_manifest(folder)

    def load(self, folder: Path) -> "QueryLikelihoodRetriever":
        folder = Path(folder)
        tokens = (folder / "vocab.txt").read_text(encoding="utf-8").split("\n")
        self.vocab = {t: i for i, t in enumerate(tokens)} if tokens != [""] else {}
        self._from_counts(sp.load_npz(folder / "counts.npz").tocsr())
        return self
