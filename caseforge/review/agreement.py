"""Agreement computed by the field's own libraries: Krippendorff's α (krippendorff), Gwet's AC1 and AC2 (irrCAC),
Cohen's κ, accuracy and the confusion matrix (scikit-learn), Spearman's ρ (scipy); every figure with a 95%
interval and the number of items it was computed on. The intervals of α, κ, accuracy and ρ are bootstrap
intervals over the items (scipy.stats.bootstrap, percentile method, seeded: the same table gives the same
numbers); those of AC1/AC2 are irrCAC's own (Gwet's variance estimator), since irrCAC takes about 0.1 s a table
here and a bootstrap of it would take minutes.

Two tables go in, per field of the labelling view:
- between annotators: items × annotators (a missing answer is None);
- the judge against the annotators' consensus: the value every annotator of the item gave (nominal), or their
  median rounded down (ordinal); an item whose annotators disagree on a nominal field has no consensus and is
  left out of the judge's figures (counted as `no_consensus`).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

MIN_ITEMS = 2        # fewer items than this: no figure (None), said so


@dataclass(frozen=True)
class Figure:
    name: str
    value: float | None
    low: float | None
    high: float | None
    n: int
    interval: str = "bootstrap"      # bootstrap | gwet (irrCAC's variance estimator)

    def text(self) -> str:
        if self.value is None:
            return f"{self.name} n/a (n={self.n})"
        interval = f" [{self.low:.3f}, {self.high:.3f}]" if self.low is not None else " [interval n/a]"
        return f"{self.name} {self.value:.3f}{interval} (n={self.n})"

    def as_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "low": self.low, "high": self.high, "n": self.n,
                "interval": self.interval}


@dataclass
class FieldAgreement:
    field: str
    ordinal: bool
    categories: list[str]
    annotators: list[Figure] = field(default_factory=list)     # between annotators
    judge: list[Figure] = field(default_factory=list)          # the judge against the consensus
    confusion: list[list[int]] = field(default_factory=list)   # rows: the judge; columns: the consensus
    items: int = 0                                             # items with an answer from every annotator asked
    no_consensus: int = 0

    def judge_figure(self, name: str) -> Figure | None:
        """The judge's figure `name` (kappa, accuracy, or ac1: Gwet's AC1 or AC2 as the scale fits)."""
        wanted = {"ac1", "ac2"} if name in ("ac1", "ac2") else {name}
        return next((f for f in self.judge if f.name in wanted), None)

    def as_dict(self) -> dict:
        return {"field": self.field, "ordinal": self.ordinal, "categories": self.categories, "items": self.items,
                "no_consensus": self.no_consensus, "annotators": [f.as_dict() for f in self.annotators],
                "judge": [f.as_dict() for f in self.judge], "confusion": self.confusion}


# --- the libraries' own figures on one table ---

def krippendorff_alpha(table: list[list[str | None]], categories: list[str], ordinal: bool) -> float:
    """α of an items × raters table (krippendorff takes raters × units, missing as NaN)."""
    import krippendorff

    codes = {c: float(i) for i, c in enumerate(categories)}
    data = np.array([[codes[v] if v is not None else np.nan for v in row] for row in table], dtype=float).T
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal" if ordinal else "nominal",
                                    value_domain=list(codes.values())))


def gwet(table: list[list[str | None]], categories: list[str], ordinal: bool) -> float:
    """Gwet's AC1 (nominal) or AC2 with ordinal weights of an items × raters table, by irrCAC."""
    return gwet_estimate(table, categories, ordinal)["coefficient_value"]


def gwet_estimate(table: list[list[str | None]], categories: list[str], ordinal: bool) -> dict:
    """irrCAC's estimate of AC1 / AC2: coefficient_value, confidence_interval (95%), se, ..."""
    import pandas as pd

    try:
        from irrCAC.raw import CAC
    except ImportError as exc:          # installed by `make setup` with --no-deps (its pins conflict: docs/review.md)
        raise ImportError("irrCAC is not installed: run `make setup` (it installs requirements-nodeps.lock)") from exc
    frame = pd.DataFrame(table, columns=[f"r{i}" for i in range(len(table[0]))]).astype(object)
    frame = frame.where(frame.notna(), np.nan)
    kwargs = {"weights": "ordinal", "categories": categories} if ordinal else {"categories": categories}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dict(CAC(frame, **kwargs).gwet()["est"])


def cohen_kappa(judge: list[str], consensus: list[str], categories: list[str], ordinal: bool) -> float:
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(judge, consensus, labels=categories, weights="quadratic" if ordinal else None))


def kappa_of_codes(judge: np.ndarray, consensus: np.ndarray, size: int, ordinal: bool) -> float:
    """Cohen's κ of two integer-coded label arrays, computed as scikit-learn's cohen_kappa_score computes it (from
    the confusion matrix, with quadratic weights on a scale), without its input checks: a bootstrap's resamples
    take 1,000 of them, which cost sklearn tens of seconds here. tests/unit/test_review_agreement.py checks it
    equals cohen_kappa_score; the figure itself is always sklearn's."""
    observed = np.bincount(judge * size + consensus, minlength=size * size).reshape(size, size).astype(float)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    grid = np.arange(size)
    weights = ((grid[:, None] - grid[None, :]) ** 2).astype(float) if ordinal else 1.0 - np.eye(size)
    return float(1 - (weights * observed).sum() / (weights * expected).sum())


def accuracy(judge: list[str], consensus: list[str]) -> float:
    """The share of items where the judge gave the consensus (sklearn's accuracy_score, without its input checks,
    which would cost a bootstrap of 1,000 resamples seconds)."""
    return float(np.mean(np.asarray(judge, dtype=object) == np.asarray(consensus, dtype=object)))


def spearman(judge: list[str], consensus: list[str]) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr([float(v) for v in judge], [float(v) for v in consensus]).statistic)


def confusion(judge: list[str], consensus: list[str], categories: list[str]) -> list[list[int]]:
    from sklearn.metrics import confusion_matrix

    return confusion_matrix(judge, consensus, labels=categories).tolist()


# --- intervals ---

def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), 6)


def with_interval(name: str, statistic, rows: list, seed: int, resamples: int) -> Figure:
    """`statistic(rows)` and its bootstrap 95% interval, resampling the rows (items) with a seeded generator."""
    from scipy.stats import bootstrap

    n = len(rows)
    if n < MIN_ITEMS:
        return Figure(name, None, None, None, n)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            value = statistic(rows)
        except (ValueError, ZeroDivisionError):
            return Figure(name, None, None, None, n)
        indices = np.arange(n)
        try:
            result = bootstrap((indices,), lambda idx: _safe(statistic, [rows[i] for i in idx]), vectorized=False,
                               n_resamples=resamples, confidence_level=0.95, method="percentile",
                               rng=np.random.default_rng(seed))
            low, high = _finite(result.confidence_interval.low), _finite(result.confidence_interval.high)
        except ValueError:
            low = high = None
    return Figure(name, _finite(value), low, high, n)


def gwet_figure(name: str, table: list[list[str]], categories: list[str], ordinal: bool) -> Figure:
    """AC1 / AC2 with irrCAC's own 95% interval."""
    n = len(table)
    if n < MIN_ITEMS:
        return Figure(name, None, None, None, n, "gwet")
    with np.errstate(all="ignore"):
        est = gwet_estimate(table, categories, ordinal)
    low, high = est.get("confidence_interval") or (None, None)
    return Figure(name, _finite(est["coefficient_value"]), _finite(low), _finite(high), n, "gwet")


def kappa_figure(pairs: list[tuple[str, str]], categories: list[str], ordinal: bool, seed: int,
                 resamples: int) -> Figure:
    """Cohen's κ by scikit-learn, its interval from bootstrap resamples computed by kappa_of_codes."""
    codes = {c: i for i, c in enumerate(categories)}
    judge = np.array([codes[a] for a, _ in pairs], dtype=int)
    consensus = np.array([codes[b] for _, b in pairs], dtype=int)
    figure = with_interval("kappa", lambda idx: kappa_of_codes(judge[idx], consensus[idx], len(categories), ordinal),
                           list(range(len(pairs))), seed, resamples)
    if figure.value is None:
        return figure
    value = _finite(cohen_kappa([a for a, _ in pairs], [b for _, b in pairs], categories, ordinal))
    return Figure("kappa", value, figure.low, figure.high, figure.n, figure.interval)


def _safe(statistic, rows) -> float:
    try:
        return statistic(rows)
    except (ValueError, ZeroDivisionError):
        return float("nan")


# --- one field ---

def consensus_of(values: list[str], ordinal: bool) -> str | None:
    if ordinal:
        ordered = sorted(int(v) for v in values)
        return str(ordered[(len(ordered) - 1) // 2])
    return values[0] if len(set(values)) == 1 else None


def field_agreement(name: str, categories: list[str], ordinal: bool, answers: dict[str, list[str | None]],
                    judge: dict[str, str | None], seed: int, resamples: int) -> FieldAgreement:
    """`answers`: item -> the annotators' values (None where one did not answer), as many per item as asked;
    `judge`: item -> the judge's value."""
    result = FieldAgreement(name, ordinal, list(categories))
    complete = [(item, values) for item, values in sorted(answers.items()) if all(v is not None for v in values)]
    result.items = len(complete)
    table = [values for _, values in complete]
    if all(len(values) > 1 for values in table):       # one annotator per item: no agreement between them
        result.annotators = [
            with_interval("alpha", lambda t: krippendorff_alpha(t, categories, ordinal), table, seed, resamples),
            gwet_figure("ac2" if ordinal else "ac1", table, categories, ordinal),
        ]
    pairs = []
    for item, values in complete:
        agreed = consensus_of(values, ordinal)
        if agreed is None:
            result.no_consensus += 1
        elif judge.get(item) is not None:
            pairs.append((judge[item], agreed))
    judged, agreed = [p[0] for p in pairs], [p[1] for p in pairs]
    result.judge = [
        with_interval("accuracy", lambda p: accuracy([a for a, _ in p], [b for _, b in p]), pairs, seed, resamples),
        kappa_figure(pairs, categories, ordinal, seed, resamples),
        gwet_figure("ac2" if ordinal else "ac1", [list(p) for p in pairs], categories, ordinal),
    ]
    if ordinal:
        result.judge.append(with_interval("spearman", lambda p: spearman([a for a, _ in p], [b for _, b in p]),
                                          pairs, seed, resamples))
    result.confusion = confusion(judged, agreed, categories) if pairs else []
    return result
