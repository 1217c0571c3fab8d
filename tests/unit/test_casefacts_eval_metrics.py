import pytest

from caseforge.tasks.casefacts.eval.metrics import (aggregate, claim_scores, evidence_score, evidence_score_f1,
                                                recall_at_k)

A, B, C = frozenset({"a"}), frozenset({"b"}), frozenset({"c"})


def test_recall_at_k_counts_gold_cases_in_the_first_k():
    assert recall_at_k([A, B], ["x", "a", "y", "b"], 1) == 0.0
    assert recall_at_k([A, B], ["x", "a", "y", "b"], 2) == 0.5
    assert recall_at_k([A, B], ["x", "a", "y", "b"], 4) == 1.0
    # a gold case named once but held under two ids counts once, whichever id is found
    assert recall_at_k([frozenset({"a1", "a2"})], ["a2"], 1) == 1.0
    with pytest.raises(ValueError):
        recall_at_k([], ["a"], 1)


def test_evidence_score_is_full_recall_when_half_the_gold_is_in_the_top_5():
    # 2 gold cases, one in the top 5, the other at rank 7: recall@5 = 0.5 → kept, score = recall = 1.0
    predicted = ["a", "x1", "x2", "x3", "x4", "x5", "b"]
    assert evidence_score([A, B], predicted) == 1.0


def test_evidence_score_is_zeroed_when_recall_at_5_is_below_half():
    # 3 gold cases, one in the top 5 (1/3 < 0.5), the other two later: zeroed despite full recall
    predicted = ["a", "x1", "x2", "x3", "x4", "b", "c"]
    assert recall_at_k([A, B, C], predicted, 10) == 1.0
    assert evidence_score([A, B, C], predicted) == 0.0
    assert evidence_score_f1([A, B, C], predicted) == 0.0
    # single gold case at rank 6: zero
    assert evidence_score([A], ["x1", "x2", "x3", "x4", "x5", "a"]) == 0.0


def test_evidence_score_f1_uses_precision_of_distinct_predictions():
    # gold {a, b}; predicted a, x, a (duplicate) → distinct {a, x}: precision 1/2, recall 1/2, F1 1/2
    assert evidence_score_f1([A, B], ["a", "x", "a"]) == pytest.approx(0.5)
    # exact prediction: F1 = 1
    assert evidence_score_f1([A, B], ["b", "a"]) == 1.0
    assert evidence_score_f1([A], []) == 0.0


def test_verdict_score_is_evidence_times_correct_verdict():
    right = claim_scores([A], ["a", "x"], gold_label="Supported", predicted_label="SUPPORTED")
    assert right["verdict_accuracy"] == 1.0 and right["verdict_score"] == 1.0
    assert right["verdict_score_f1"] == pytest.approx(2 * 0.5 * 1 / 1.5)
    wrong = claim_scores([A], ["a"], gold_label="Refuted", predicted_label="Supported")
    assert wrong["evidence_score"] == 1.0 and wrong["verdict_score"] == 0.0
    guessed = claim_scores([A], ["x"], gold_label="Refuted", predicted_label="refuted")
    assert guessed["verdict_accuracy"] == 1.0 and guessed["verdict_score"] == 0.0


def test_aggregate_macro_averages_overall_and_per_class():
    per_item = [
        ("Supported", {"recall@1": 1.0, "verdict_accuracy": 1.0}),
        ("Supported", {"recall@1": 0.0, "verdict_accuracy": 1.0}),
        ("Refuted", {"recall@1": 0.5, "verdict_accuracy": 0.0}),
    ]
    result = aggregate(per_item)
    assert result["n"] == 3
    assert result["recall@1"] == pytest.approx(0.5)
    assert result["verdict_accuracy"] == pytest.approx(2 / 3)
    assert result["recall@1/SUPPORTED"] == 0.5 and result["n/SUPPORTED"] == 2
    assert result["verdict_accuracy/REFUTED"] == 0.0 and result["n/REFUTED"] == 1
