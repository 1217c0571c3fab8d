"""Rankings must not depend on corpus order or on how numpy's kernels order equal scores.

Exact score ties are common (the same passage cited twice, equal-length paragraphs with the same
query-term counts). Which tied document makes the top k has to be decided by its id, or a request
built from the ranking gets another identity on another machine (issue 16: BM25 ranks 5–7 tied for
AQuAECHR q393, and numpy's AVX-512 and AVX2 partition kernels kept different ones).
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from caseforge.retrieval import Corpus, build_retriever
from caseforge.retrieval.base import top_k_rows

TIED_TEXT = "the applicant complained of the length of the criminal proceedings"
TIED_IDS = ["p-07", "p-03", "p-11", "p-01", "p-05"]
OTHER = [
    ("p-02", "the court reiterates that the reasonableness of the length of proceedings is assessed"),
    ("p-04", "Article 6 applies to criminal proceedings from the moment of the charge"),
    ("p-06", "the Government contested that argument"),
    ("p-08", "a violation of the right to respect for private life under Article 8"),
    ("p-09", "just satisfaction for non-pecuniary damage"),
    ("p-10", "the domestic courts dismissed the appeal"),
]
QUERY = "length of the criminal proceedings complained"


def corpus_in_order(seed: int) -> Corpus:
    pairs = [(doc_id, TIED_TEXT) for doc_id in TIED_IDS] + OTHER
    random.Random(seed).shuffle(pairs)
    return Corpus.from_pairs("ties", pairs)


@pytest.mark.parametrize("name", ["bm25", "qlm", "hybrid-sparse"])
def test_sparse_retrievers_keep_the_same_top_k_whatever_the_corpus_order(name, tmp_path):
    results = set()
    for seed in range(8):
        corpus = corpus_in_order(seed)
        if name == "hybrid-sparse":
            retriever = build_retriever("hybrid", corpus, persist=False, hybrid_parts=("bm25", "qlm"))
        else:
            retriever = build_retriever(name, corpus, persist=False)
        hits = retriever.search([QUERY], k=3)[0]
        results.add(tuple(doc_id for doc_id, _ in hits))
    # five documents tie on top; the three with the smallest ids win, in id order
    assert results == {("p-01", "p-03", "p-05")}


@pytest.mark.slow
def test_dense_retriever_keeps_the_same_top_k_whatever_the_corpus_order(tmp_path):
    from caseforge.retrieval.dense import default_model_path

    try:
        default_model_path()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    results = set()
    for seed in range(4):
        retriever = build_retriever("dense", corpus_in_order(seed), persist=False)
        results.add(tuple(doc_id for doc_id, _ in retriever.search([QUERY], k=3)[0]))
    assert results == {("p-01", "p-03", "p-05")}


def test_ties_at_the_cut_are_decided_by_id_not_by_the_partition_kernel():
    ids = tuple(f"d{i:03d}" for i in range(300))
    row = np.full(300, 0.5)
    row[[0, 1, 2, 3]] = [9.28, 8.36, 7.88, 6.86]
    tied = [71, 76, 78]                 # the q393 pattern: ranks 5, 6 and 7 share one score
    row[tied] = 6.8095717
    row[78] += 4e-15                    # float noise of the kind another summation order leaves
    hits = top_k_rows(row[None, :], ids, 5)[0]
    assert [doc_id for doc_id, _ in hits] == ["d000", "d001", "d002", "d003", "d071"]


def test_ties_go_by_id_even_when_the_corpus_lists_them_in_another_order():
    ids = ("c", "a", "b", "d")
    row = np.array([[1.0, 1.0, 1.0, 2.0]])
    assert [doc_id for doc_id, _ in top_k_rows(row, ids, 3)[0]] == ["d", "a", "b"]
