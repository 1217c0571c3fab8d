"""CaseFacts metrics, per claim and macro-averaged over claims.

Gold evidence is a list of gold cases, each a set of case ids (one name can map to several ids);
a gold case is found when any of its ids is among the predicted ids. Predictions are ranked.

- recall@k: share of gold cases found in the first k predictions.
- Evidence Score: recall of gold cases over all predictions, set to 0 when recall@5 < 0.5.
- evidence_score_f1: the released code's variant, F1 of predicted vs gold cases, same zeroing.
- Verdict Accuracy: predicted label == gold label.
- Verdict Score: Evidence Score × verdict correct.
- verdict_f1/<LABEL>: F1 of each label over the claims (a claim without a stated verdict predicts no label), and
  verdict_macro_f1 their mean over the labels that are gold or predicted at least once.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Sequence

GoldCases = Sequence[frozenset[str]]
ZEROING_K = 5
ZEROING_RECALL = 0.5


def _found(gold: GoldCases, predicted: Iterable[str]) -> int:
    predicted = set(predicted)
    return sum(1 for ids in gold if ids & predicted)


def recall_at_k(gold: GoldCases, predicted: Sequence[str], k: int) -> float:
    if not gold:
        raise ValueError("recall needs at least one gold case")
    return _found(gold, predicted[:k]) / len(gold)


def _passes_threshold(gold: GoldCases, predicted: Sequence[str]) -> bool:
    return recall_at_k(gold, predicted, ZEROING_K) >= ZEROING_RECALL


def evidence_score(gold: GoldCases, predicted: Sequence[str]) -> float:
    if not _passes_threshold(gold, predicted):
        return 0.0
    return _found(gold, predicted) / len(gold)


def evidence_score_f1(gold: GoldCases, predicted: Sequence[str]) -> float:
    if not predicted or not _passes_threshold(gold, predicted):
        return 0.0
    recall = _found(gold, predicted) / len(gold)
    all_gold = set().union(*gold)
    distinct = list(dict.fromkeys(predicted))
    precision = sum(1 for p in distinct if p in all_gold) / len(distinct)
    if recall + precision == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def claim_scores(gold: GoldCases, predicted: Sequence[str], ks: Sequence[int] = (1, 5, 10),
                 gold_label: str | None = None, predicted_label: str | None = None) -> dict[str, float]:
    scores = {f"recall@{k}": recall_at_k(gold, predicted, k) for k in ks}
    scores["evidence_score"] = evidence_score(gold, predicted)
    scores["evidence_score_f1"] = evidence_score_f1(gold, predicted)
    if gold_label is not None and predicted_label is not None:
        correct = float(normalise_label(predicted_label) == normalise_label(gold_label))
        scores["verdict_accuracy"] = correct
        scores["verdict_score"] = scores["evidence_score"] * correct
        scores["verdict_score_f1"] = scores["evidence_score_f1"] * correct
    return scores


def normalise_label(label: str | None) -> str | None:
    return label.strip().upper() if isinstance(label, str) and label.strip() else None


def aggregate(per_item: list[tuple[str, dict[str, float]]]) -> dict[str, float]:
    """Macro average over claims, overall and per gold class (`<metric>/<CLASS>`), with counts `n`, `n/<CLASS>`."""
    totals: dict[str, list[float]] = defaultdict(list)
    by_class: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for label, scores in per_item:
        for name, value in scores.items():
            totals[name].append(value)
            by_class[normalise_label(label) or "UNKNOWN"][name].append(value)
    result: dict[str, float] = {name: sum(v) / len(v) for name, v in sorted(totals.items())}
    result["n"] = len(per_item)
    for label in sorted(by_class):
        items = by_class[label]
        result[f"n/{label}"] = len(next(iter(items.values()), []))
        for name, values in sorted(items.items()):
            result[f"{name}/{label}"] = sum(values) / len(values)
    return result


VERDICT_LABELS = ("SUPPORTED", "REFUTED", "OVERRULED")


def verdict_f1(pairs: list[tuple[str, str | None]]) -> dict[str, float | None]:
    """(gold label, predicted label or None) per claim → `verdict_f1/<LABEL>` (None for a label neither gold nor
    predicted) and `verdict_macro_f1`, the mean of those that are not None."""
    metrics: dict[str, float | None] = {}
    for label in VERDICT_LABELS:
        hits = sum(gold == label and predicted == label for gold, predicted in pairs)
        wrong = sum((gold == label) != (predicted == label) for gold, predicted in pairs)
        metrics[f"verdict_f1/{label}"] = 2 * hits / (2 * hits + wrong) if 2 * hits + wrong else None
    defined = [v for v in metrics.values() if v is not None]
    metrics["verdict_macro_f1"] = sum(defined) / len(defined) if defined else None
    return metrics
