"""Queries per second for each retriever on synthetic passages.

    .venv/bin/python bench/retrieval.py [N_PASSAGES] [N_DENSE] [--quick]

Passages are random word sequences from a Zipf-distributed vocabulary (so a few words are
frequent, most are rare, as in real text). Lexical retrievers run on N_PASSAGES (default 100,000);
dense encoding on CPU is the bottleneck, so dense and hybrid run on N_DENSE (default 500) and
the printout says so. Build time and search throughput are measured in this one run.
--quick: 1,000 passages, 10 for dense, 20 queries (CI checks that the bench still runs; loading the model is most
of it).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from caseforge.retrieval import Corpus, build_retriever

VOCAB = 30_000
WORDS_PER_PASSAGE = 60
N_QUERIES = 200
QUERY_WORDS = 8
K = 10


def synthetic(n: int, seed: int = 0, n_queries: int = N_QUERIES) -> tuple[Corpus, list[str]]:
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(VOCAB)])
    ranks = np.minimum(rng.zipf(1.2, size=(n, WORDS_PER_PASSAGE)), VOCAB) - 1
    texts = [" ".join(words[row]) for row in ranks]
    query_ranks = np.minimum(rng.zipf(1.2, size=(n_queries, QUERY_WORDS)), VOCAB) - 1
    queries = [" ".join(words[row]) for row in query_ranks]
    return Corpus.from_pairs(f"synthetic{n}", ((f"p{i}", t) for i, t in enumerate(texts))), queries


def measure(kind: str, corpus: Corpus, queries: list[str]) -> tuple[float, float]:
    start = time.perf_counter()
    retriever = build_retriever(kind, corpus, persist=False)
    built = time.perf_counter() - start
    retriever.search(queries[:5], K)   # warm up (model load, numba compile)
    start = time.perf_counter()
    results = retriever.search(queries, K)
    elapsed = time.perf_counter() - start
    assert len(results) == len(queries) and all(len(r) == K for r in results)
    return built, len(queries) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=100_000, help="passages for the lexical retrievers")
    parser.add_argument("n_dense", nargs="?", type=int, default=500, help="passages for dense and hybrid")
    parser.add_argument("--quick", action="store_true", help="1,000 passages, 10 for dense, 20 queries")
    args = parser.parse_args()
    n, n_dense, n_queries = (1_000, 10, 20) if args.quick else (args.n, args.n_dense, N_QUERIES)
    big, queries = synthetic(n, n_queries=n_queries)
    small, _ = synthetic(n_dense, seed=1)
    print(f"{n_queries} queries of {QUERY_WORDS} words, top {K}; passages of {WORDS_PER_PASSAGE} words")
    print(f"{'retriever':<8} {'passages':>9} {'build s':>8} {'queries/s':>10}")
    for kind, corpus in (("bm25", big), ("qlm", big), ("dense", small), ("hybrid", small)):
        built, qps = measure(kind, corpus, queries)
        note = "  (smaller N: CPU encoding)" if corpus is small else ""
        print(f"{kind:<8} {len(corpus):>9} {built:>8.1f} {qps:>10.1f}{note}")


if __name__ == "__main__":
    main()
