import math

import numpy as np
import pytest

from caseforge.retrieval import Corpus, build_retriever
from caseforge.retrieval.bm25 import BM25Retriever
from caseforge.retrieval.hybrid import reciprocal_rank_fusion
from caseforge.retrieval.qlm import QueryLikelihoodRetriever

THREE_DOCS = [("d1", "apple banana apple"), ("d2", "banana cherry"), ("d3", "cherry cherry cherry apple")]


def test_qlm_scores_match_hand_computed_log_likelihoods():
    # collection: apple 3, banana 2, cherry 4 of 9 tokens; mu = 2; |d1|=3, |d2|=2, |d3|=4
    qlm = QueryLikelihoodRetriever(Corpus.from_pairs("three", THREE_DOCS), mu=2).build()
    p_apple, p_banana, p_cherry = 3 / 9, 2 / 9, 4 / 9
    expected_apple_cherry = [
        math.log((2 + 2 * p_apple) / (3 + 2)) + math.log((0 + 2 * p_cherry) / (3 + 2)),
        math.log((0 + 2 * p_apple) / (2 + 2)) + math.log((1 + 2 * p_cherry) / (2 + 2)),
        math.log((1 + 2 * p_apple) / (4 + 2)) + math.log((3 + 2 * p_cherry) / (4 + 2)),
    ]
    # repeated query word counts twice; "durian" is outside the collection and is skipped
    expected_banana_banana = [
        2 * math.log((1 + 2 * p_banana) / 5),
        2 * math.log((1 + 2 * p_banana) / 4),
        2 * math.log((0 + 2 * p_banana) / 6),
    ]
    scores = qlm.score(["apple cherry", "banana banana durian"])
    np.testing.assert_allclose(scores[0], expected_apple_cherry, rtol=1e-12)
    np.testing.assert_allclose(scores[1], expected_banana_banana, rtol=1e-12)
    hits = qlm.search(["apple cherry"], k=3)[0]
    assert [doc for doc, _ in hits] == ["d3", "d1", "d2"]
    assert hits[0][1] == pytest.approx(expected_apple_cherry[2])


def test_qlm_default_mu_is_2000_and_rejects_non_positive():
    corpus = Corpus.from_pairs("three", THREE_DOCS)
    assert QueryLikelihoodRetriever(corpus).mu == 2000
    with pytest.raises(ValueError):
        QueryLikelihoodRetriever(corpus, mu=0)


def test_bm25_ranks_the_matching_document_first_and_handles_unknown_words():
    corpus = Corpus.from_pairs("pets", [("a", "the cat sat on the mat"), ("b", "dogs chase cats"),
                                        ("c", "a dog ate my homework, the dog")])
    bm25 = BM25Retriever(corpus).build()
    results = bm25.search(["dog homework", "zebra"], k=2)
    assert results[0][0][0] == "c"
    assert len(results[0]) == 2 and results[0][0][1] > results[0][1][1]
    assert [score for _, score in results[1]] == [0.0, 0.0]


def test_search_clamps_k_to_corpus_size():
    qlm = QueryLikelihoodRetriever(Corpus.from_pairs("three", THREE_DOCS)).build()
    assert len(qlm.search(["apple"], k=50)[0]) == 3


def test_rrf_fuses_ranks_with_k():
    fused = reciprocal_rank_fusion([[("x", 9.0), ("y", 5.0)], [("y", 0.9), ("z", 0.1)]], rrf_k=60)
    assert fused[0][0] == "y"
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert dict(fused)["x"] == pytest.approx(1 / 61)
    assert dict(fused)["z"] == pytest.approx(1 / 62)


def test_fingerprint_changes_with_text_or_id():
    a = Corpus.from_pairs("c", THREE_DOCS)
    b = Corpus.from_pairs("c", THREE_DOCS[:2] + [("d3", "cherry apple")])
    c = Corpus.from_pairs("c", THREE_DOCS[:2] + [("d4", THREE_DOCS[2][1])])
    assert len({a.fingerprint, b.fingerprint, c.fingerprint}) == 3
    assert a.fingerprint == Corpus.from_pairs("c", THREE_DOCS).fingerprint
    with pytest.raises(ValueError, match="duplicate"):
        Corpus.from_pairs("c", THREE_DOCS + [("d1", "again")])


@pytest.mark.parametrize("kind", ["bm25", "qlm"])
def test_index_persists_and_rebuilds_when_corpus_changes(tmp_path, kind, monkeypatch):
    corpus = Corpus.from_pairs("fruit", THREE_DOCS)
    first = build_retriever(kind, corpus, tmp_path)
    folder = tmp_path / "fruit" / kind
    assert (folder / "manifest.json").exists()
    built = []
    monkeypatch.setattr(type(first), "build", lambda self: built.append(1) or self)
    loaded = build_retriever(kind, corpus, tmp_path)
    assert built == []  # loaded from disk, not rebuilt
    assert loaded.search(["cherry"], k=3) == first.search(["cherry"], k=3)
    monkeypatch.undo()
    changed = Corpus.from_pairs("fruit", THREE_DOCS + [("d4", "durian durian")])
    rebuilt = build_retriever(kind, changed, tmp_path)
    assert rebuilt.search(["durian"], k=1)[0][0][0] == "d4"


def test_unknown_retriever_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown retriever"):
        build_retriever("colbert", Corpus.from_pairs("x", THREE_DOCS), persist=False)


def test_bm25_snowball_stemmer_matches_inflected_forms():
    corpus = Corpus.from_pairs("stems", [("a", "The officers searched the phones of those arrested."),
                                         ("b", "A treaty about fishing rights in the river.")])
    plain = BM25Retriever(corpus).build()
    stemmed = BM25Retriever(corpus, stemmer="english").build()
    # surface forms: "searching"/"phone"/"arrests" share no token with "searched"/"phones"/"arrested"
    assert [score for _, score in plain.search(["searching a phone after arrests"], k=2)[0]] == [0.0, 0.0]
    hit = stemmed.search(["searching a phone after arrests"], k=2)[0]
    assert hit[0][0] == "a" and hit[0][1] > 0 and hit[1][1] == 0.0
    assert stemmed.params()["stemmer"] == "english" and "stemmer" not in plain.params()
    # the same setting gives the same index; another setting is another index
    qlm = QueryLikelihoodRetriever(corpus, stemmer="english").build()
    assert qlm.search(["searching phones"], k=1)[0][0][0] == "a"
    with pytest.raises(ValueError, match="stemmer"):
        BM25Retriever(corpus, stemmer="klingon")


def test_stemmed_and_plain_indexes_persist_side_by_side(tmp_path):
    corpus = Corpus.from_pairs("stems", [("a", "searched phones"), ("b", "fishing rights")])
    build_retriever("bm25", corpus, tmp_path)
    build_retriever("bm25", corpus, tmp_path, stemmer="english")
    assert sorted(p.name for p in (tmp_path / "stems").iterdir()) == ["bm25", "bm25-english"]
