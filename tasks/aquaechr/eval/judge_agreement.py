"""How well the judge agrees with expert scores: F1 and confusion matrix per dimension and overall.

A pair is high quality on a dimension when its score is above the threshold (3), low quality otherwise;
the expert's and the judge's scores are binarised the same way. Two conventions name the positive class:

- `paper` (default): high quality is positive. The paper's Table 2 counts this way: its TP + FN are the
  pairs the expert scored above 3 (fluency: 281 + 4 = 285 of 300), and its fluency F1 96.9 is
  2·281 / (2·281 + 14 + 4).
- `caseforge`: low quality is positive (what this module reported before; the F1 are not comparable).

Overall: a pair is high quality only when all three dimensions are above the threshold, so it is low
quality when any dimension is at or below it — for the expert and for the judge alike. (The paper's own
overall row does not follow from its counts: TP 156, FP 37, FN 26 give F1 83.2, not the 63.38 printed.)

Next to every F1 goes that of a judge that always answers "high" on every dimension, a baseline the paper
does not give: on its 300 pairs it reaches 97.4 on fluency (2·285 / (2·285 + 15)), above the judge's 96.9.
Under `caseforge` it never finds a positive and scores 0.
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
CONVENTIONS = {"paper": "high", "caseforge": "low"}       # convention → the positive class
DEFAULT_CONVENTION = "paper"
ALWAYS_HIGH = 5


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
    convention: str = DEFAULT_CONVENTION
    baseline: dict[str, Confusion] = field(default_factory=dict)           # a judge always answering "high"

    def positive(self) -> str:
        if CONVENTIONS[self.convention] == "high":
            return f"high quality (score > {self.threshold}) is the positive class, as in the paper"
        return f"low quality (score <= {self.threshold}) is the positive class (caseforge's earlier convention)"

    def lines(self) -> list[str]:
        out = [f"judge vs expert on {self.judged} pairs; convention {self.convention}: {self.positive()}",
               f"overall: high quality only when all of {', '.join(DIMENSIONS)} score above {self.threshold} "
               f"(low when any is at or below), for the expert and the judge alike",
               f"{'dimension':<18} {'F1':>6} {'TP':>4} {'FP':>4} {'FN':>4} {'TN':>4} {'always-high F1':>15}"]
        for name, c in self.per_dimension.items():
            base = self.baseline.get(name, Confusion())
            out.append(f"{name:<18} {100 * c.f1:6.1f} {c.tp:>4} {c.fp:>4} {c.fn:>4} {c.tn:>4} {100 * base.f1:>11.1f}")
        return out


def agreement(gold: list[GoldPair], predicted: dict[str, dict[str, int]], threshold: int,
              convention: str = DEFAULT_CONVENTION) -> Agreement:
    """Confusion matrices of the judge's scores (`predicted`, by pair key) against the expert's, and those of
    a judge that always answers "high", over the pairs the judge scored."""
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r} (choose from {', '.join(CONVENTIONS)})")
    positive_high = CONVENTIONS[convention] == "high"
    rows = (*DIMENSIONS, "overall")
    result = Agreement(threshold, {d: Confusion() for d in rows}, convention=convention,
                       baseline={d: Confusion() for d in rows})

    def positive(scores: dict[str, int], dimension: str) -> bool:
        high = (all(scores[d] > threshold for d in DIMENSIONS) if dimension == "overall"
                else scores[dimension] > threshold)
        return high if positive_high else not high

    always_high = {d: ALWAYS_HIGH for d in DIMENSIONS}
    for pair in gold:
        scores = predicted.get(pair.key)
        if scores is None:
            continue
        result.judged += 1
        for dimension in rows:
            truth = positive(pair.scores, dimension)
            result.per_dimension[dimension].add(truth, positive(scores, dimension))
            result.baseline[dimension].add(truth, positive(always_high, dimension))
    return result


def evaluate(con, backend, gold: list[GoldPair], threshold: int = DEFAULT_LOW_QUALITY_AT,
             convention: str = DEFAULT_CONVENTION) -> Agreement:
    unique = {p.key: p for p in gold}
    job = run_job(con, "aquaechr-judge", backend, [judge_request(k, p.question, p.answer) for k, p in unique.items()],
                  JudgeVerdict)
    predicted = {k: {d: getattr(v, d) for d in DIMENSIONS} for k, v in job.outputs.items()}
    result = agreement(gold, predicted, threshold, convention)
    result.predicted = predicted
    result.failures = [f"judge failed on pair {k}: {f.reason}" for k, f in job.failures.items()]
    return result


def judge_card(con, gold: list[GoldPair], predicted: dict[str, dict[str, int]], review):
    """The judge card of the quality judge against the expert scores, in the shape a review on Label Studio gives
    (caseforge.review.card): one expert per pair, the judge's 1–5 scores against the expert's on each dimension,
    with 95% intervals and the confusion matrices. `review`: the settings' [review] table (seed, resamples)."""
    from caseforge.review.card import judge_models, table_card

    answers = {p.key: {d: [str(p.scores[d])] for d in DIMENSIONS} for p in gold if p.key in predicted}
    verdicts = {k: {d: str(v[d]) for d in DIMENSIONS} for k, v in predicted.items()}
    return table_card("aquaechr", "aquaechr-judge", judge_models(con, "aquaechr"), "the published expert scores",
                      1, answers, verdicts, len(gold), review.seed, review.bootstrap_resamples,
                      sample="every pair of the gold file")
