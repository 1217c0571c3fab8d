"""How well the judge agrees with expert scores: F1 and confusion matrix per dimension.

Low quality (score ≤ threshold) is the positive class, per dimension and overall (any dimension low).
"""
from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from caseforge.llm import run_job
from caseforge.tasks.aquaechr.filters import DEFAULT_LOW_QUALITY_AT, DIMENSIONS, judge_request
from caseforge.tasks.aquaechr.schemas import JudgeVerdict

GOLD_COLUMNS = ("question", "answer", *DIMENSIONS)
LLM_STEPS = {"aquaechr-judge": "judge"}      # the judge under test, with its role (caseforge.llm.config)


@dataclass
class GoldPair:
    question: str
    answer: str
    scores: dict[str, int]

    @property
    def key(self) -> str:
        return hashlib.sha256(f"{self.question}\x00{self.answer}".encode()).hexdigest()[:20]


def gold_sha(gold: list[GoldPair]) -> str:
    """What the agreement was measured on: every pair and its expert scores, in order."""
    digest = hashlib.sha256()
    for pair in gold:
        digest.update(f"{pair.key}\x00{sorted(pair.scores.items())}\x01".encode())
    return digest.hexdigest()


def read_gold(path: Path) -> list[GoldPair]:
    if not path.exists():
        raise FileNotFoundError(f"gold file not found: {path}")
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in GOLD_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
        pairs = []
        for line, row in enumerate(reader, start=2):
            try:
                scores = {d: int(row[d]) for d in DIMENSIONS}
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{path}:{line}: scores must be integers 1–5 ({exc})") from exc
            if any(not 1 <= s <= 5 for s in scores.values()):
                raise ValueError(f"{path}:{line}: scores must be between 1 and 5")
            pairs.append(GoldPair(row["question"], row["answer"], scores))
    return pairs


@dataclass
class Confusion:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, truth: bool, predicted: bool) -> None:
        if truth and predicted:
            self.tp += 1
        elif predicted:
            self.fp += 1
        elif truth:
            self.fn += 1
        else:
            self.tn += 1

    @property
    def f1(self) -> float:
        denominator = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / denominator if denominator else 0.0


@dataclass
class Agreement:
    threshold: int
    per_dimension: dict[str, Confusion] = field(default_factory=dict)
    judged: int = 0
    failures: list[str] = field(default_factory=list)
    predicted: dict[str, dict[str, int]] = field(default_factory=dict)     # pair key → the judge's scores

    def lines(self) -> list[str]:
        out = [f"judge vs expert on {self.judged} pairs (low quality = score <= {self.threshold} is positive)",
               f"{'dimension':<18} {'F1':>6} {'TP':>4} {'FP':>4} {'FN':>4} {'TN':>4}"]
        for name, c in self.per_dimension.items():
            out.append(f"{name:<18} {100 * c.f1:6.1f} {c.tp:>4} {c.fp:>4} {c.fn:>4} {c.tn:>4}")
        return out


def agreement(gold: list[GoldPair], predicted: dict[str, dict[str, int]], threshold: int) -> Agreement:
    result = Agreement(threshold, {d: Confusion() for d in (*DIMENSIONS, "overall")})
    for pair in gold:
        scores = predicted.get(pair.key)
        if scores is None:
            continue
        result.judged += 1
        for dimension in DIMENSIONS:
            result.per_dimension[dimension].add(pair.scores[dimension] <= threshold, scores[dimension] <= threshold)
        result.per_dimension["overall"].add(any(pair.scores[d] <= threshold for d in DIMENSIONS),
                                            any(scores[d] <= threshold for d in DIMENSIONS))
    return result


def evaluate(con, backend, gold: list[GoldPair], threshold: int = DEFAULT_LOW_QUALITY_AT) -> Agreement:
    unique = {p.key: p for p in gold}
    job = run_job(con, "aquaechr-judge", backend, [judge_request(k, p.question, p.answer) for k, p in unique.items()],
                  JudgeVerdict)
    predicted = {k: {d: getattr(v, d) for d in DIMENSIONS} for k, v in job.outputs.items()}
    result = agreement(gold, predicted, threshold)
    result.predicted = predicted
    result.failures = [f"judge failed on pair {k}: {f.reason}" for k, f in job.failures.items()]
    return result
