"""Every metric on hand-made examples whose value was worked out by hand."""
import numpy as np
import pytest

from caseforge.tasks.aquaechr.eval.citations import Citation, Sentence
from caseforge.tasks.aquaechr.eval.metrics import (aggregate, citation_faithfulness, citation_prf, claim_recall,
                                            evidence_nli, greedy_match_f1, rouge_l)
from aquaechr_eval_doubles import SubstringNLIDouble


def test_rouge_l_by_hand():
    # LCS of "the cat sat on the mat" / "the cat lay on the mat" is 5 of 6 tokens each side: F = 5/6
    assert rouge_l("the cat lay on the mat", "the cat sat on the mat") == pytest.approx(5 / 6)
    # citation markers are not words of the answer
    assert rouge_l("the cat lay [Doc 1] on the mat [2].", "the cat sat on the mat") == pytest.approx(5 / 6)
    assert rouge_l("completely different words", "the cat sat on the mat") == 0.0


def test_greedy_matching_by_hand():
    candidate = np.array([[1.0, 0.0], [0.0, 2.0]])
    reference = np.array([[3.0, 0.0]])
    # cosines: [[1], [0]]; P = (1 + 0) / 2, R = 1, F = 2 * .5 * 1 / 1.5
    assert greedy_match_f1(candidate, reference) == pytest.approx((0.5, 1.0, 2 / 3))
    same = np.array([[1.0, 1.0], [1.0, -1.0]])
    assert greedy_match_f1(same, same) == pytest.approx((1.0, 1.0, 1.0))
    assert greedy_match_f1(np.zeros((0, 2)), reference) == (0.0, 0.0, 0.0)


def test_claim_recall_by_hand():
    nli = SubstringNLIDouble()
    result = claim_recall("A dog barks [Doc 1]. A cat sleeps.", "A dog barks. A bird sings. A cat sleeps.", nli)
    assert (result.value, result.entailed, result.judged, result.failed) == (pytest.approx(2 / 3), 2, 3, 0)
    # the premise is the marker-free answer
    assert nli.asked[0][0] == "A dog barks. A cat sleeps."


def test_claim_recall_leaves_failed_judgments_out_and_counts_them():
    result = claim_recall("A dog barks.", "A dog barks. FAIL here. A cat sleeps.", SubstringNLIDouble())
    assert (result.value, result.judged, result.failed) == (0.5, 2, 1)


def test_claim_recall_of_empty_answer_is_zero():
    assert claim_recall("", "One. Two.", SubstringNLIDouble()).value == 0.0


TEXTS = {"a#1": "The dog barks loudly at night.", "a#2": "The cat sleeps.", "b#5": "Birds sing.",
         "c#9": "Rules apply.", "d#4": "Indeed rules apply here too."}


def test_citation_faithfulness_by_hand():
    sentences = [
        Sentence("The dog barks quietly.", [Citation(1, "a#1")]),           # a#1 says "loudly": no
        Sentence("The cat sleeps.", [Citation(2, "a#2"), Citation(3, "b#5")]),  # premise a#2 + b#5: yes
        Sentence("Uncited claim.", []),                                      # not counted
        Sentence("Invalid only.", [Citation(7, None)]),                      # no valid citation: not counted
    ]
    result = citation_faithfulness(sentences, TEXTS, SubstringNLIDouble())
    assert (result.value, result.entailed, result.judged) == (0.5, 1, 2)
    assert citation_faithfulness([Sentence("x", [])], TEXTS, SubstringNLIDouble()).value == 0.0


def test_citation_exact_match_by_hand():
    # hits = {a#1}: P = 1/3, R = 1/2, F1 = 2 * (1/6) / (5/6) = 0.4
    assert citation_prf({"a#1", "a#2", "b#5"}, {"a#1", "c#9"}) == pytest.approx((1 / 3, 0.5, 0.4))
    assert citation_prf(set(), {"a#1"}) == (0.0, 0.0, 0.0)
    assert citation_prf({"a#1"}, {"a#1"}) == (1.0, 1.0, 1.0)


def test_evidence_nli_by_hand():
    nli = SubstringNLIDouble()
    # gold blocks: case a = a#1 + a#2 (identical generated block: covered without asking),
    # case c = "Rules apply." entailed by generated block d ("Indeed rules apply here too.") → 2/2
    full = evidence_nli(["a#2", "a#1", "d#4"], ["a#1", "a#2", "c#9"], TEXTS, nli)
    assert (full.value, full.entailed, full.judged) == (1.0, 2, 2)
    assert all(h == "Rules apply." for _, h in nli.asked)
    # generated only b#5: case a (two paragraphs) not covered, case c not covered → 0/2
    assert evidence_nli(["b#5"], ["a#1", "a#2", "c#9"], TEXTS, SubstringNLIDouble()).value == 0.0
    # generated a#1 only: block "dog..." does not contain the gold a block (a#1 + a#2) → 0; c → 0
    assert evidence_nli(["a#1", "d#4"], ["a#1", "a#2"], TEXTS, SubstringNLIDouble()).value == 0.0
    assert evidence_nli([], ["a#1"], TEXTS, SubstringNLIDouble()).value == 0.0


def test_aggregate_means_and_citation_metrics_for_a_system_that_does_not_cite():
    items = [{"rouge_l": 0.2, "citation_f1": 0.5, "claim_recall": None, "nli_failed": 1},
             {"rouge_l": 0.4, "citation_f1": 0.0, "claim_recall": 1.0, "invalid_citations": 2}]
    citing = aggregate(items, cites=True)
    assert citing["rouge_l"] == pytest.approx(0.3)
    assert citing["citation_f1"] == pytest.approx(0.25)
    assert citing["claim_recall"] == 1.0
    assert (citing["nli_failed"], citing["invalid_citations"]) == (1.0, 2.0)
    assert aggregate(items, cites=False)["citation_f1"] is None

