"""BM25 via bm25s over the shared tokenizer (optionally Snowball-stemmed), scored in float64 (see
caseforge.ranking)."""
from __future__ import annotations

import logging
from pathlib import Path

import bm25s
import numpy as np

from caseforge.retrieval.base import Hit, Retriever, top_k_rows
from caseforge.retrieval.corpus import Corpus
from caseforge.retrieval.tokenize import tokenize

logging.getLogger("bm25s").setLevel(logging.WARNING)


class BM25Retriever(Retriever):
    name = "bm25"

    def __init__(self, corpus: Corpus, k1: float = 1.5, b: float = 0.75, method: str = "lucene",
                 stemmer: str | None = None):
        super().__init__(corpus)
        self.k1, self.b, self.method, self.stemmer = k1, b, method, stemmer
        tokenize("check", stemmer)                 # an unknown stemmer fails here
        self.model: bm25s.BM25 | None = None
        self.vocab: dict[str, int] = {}

    def params(self) -> dict:
        params = {"k1": self.k1, "b": self.b, "method": self.method, "dtype": "float64"}
        if self.stemmer:
            params["stemmer"] = self.stemmer
        return params

    def build(self) -> "BM25Retriever":
        ids_per_doc = []
        for text in self.corpus.texts:
            ids_per_doc.append([self.vocab.setdefault(t, len(self.vocab)) for t in tokenize(text, self.stemmer)])
        self.model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method, dtype="float64")
        self.model.index(bm25s.tokenization.Tokenized(ids=ids_per_doc, vocab=dict(self.vocab)), show_progress=False)
        return self

    def search(self, queries: list[str], k: int = 10) -> list[list[Hit]]:
        results: list[list[Hit]] = []
        for query in queries:
            token_ids = [self.vocab[t] for t in tokenize(query, self.stemmer) if t in self.vocab]
            if not token_ids:
                scores = np.zeros(len(self.corpus))
            else:
                scores = self.model.get_scores(token_ids)
            results.extend(top_k_rows(np.asarray(scores, dtype=np.float64)[None, :], self.corpus.ids, k,
                                       self.corpus.tie_ranks))
        return results

    def save(self, folder: Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save(str(folder / "bm25s"), show_progress=False)
        tokens = sorted(self.vocab, key=self.vocab.get)
        (folder / "vocab.txt").write_text("\n".join(tokens), encoding="utf-8")
        self.write_manifest(folder)

    def load(self, folder: Path) -> "BM25Retriever":
        folder = Path(folder)
        self.model = bm25s.BM25.load(str(folder / "bm25s"), show_progress=False)
        tokens = (folder / "vocab.txt").read_text(encoding="utf-8").split("\n")
        self.vocab = {t: i for i, t in enumerate(tokens)} if tokens != [""] else {}
        return self
