"""Source health (issue 43): what each source's upstream listed tonight, what was fetched, parsed, loaded and
quarantined, and its parse yield, compared with the nights before by three rules (`[source_health]` in the
settings):

- listing: the upstream listed fewer than `listing_min_ratio` of what it listed on the last night whose health
  did not fail (a query that silently returns nothing, a term list cut short);
- quiet: nothing new for longer than `quiet_gap_factor` times the source's usual gap between nights that
  brought something new (the median gap over the last `baseline_nights` such nights);
- yield: the parse yield (paragraphs per judgment, sections found per Chinese judgment, citations per guide
  page) under `yield_min_ratio` of its baseline (the median over the last `baseline_nights` nights that parsed
  something), taken over at least `yield_min_basis` documents parsed tonight: a layout change that parses every judgment into one paragraph without breaking a gate.

A rule needs history to judge (one earlier night for listing and yield, two nights with something new for quiet);
until then it says nothing. A broken rule warns or fails as `on_<rule>` says. Pure: the nightly runner reads the
history (ops.source_health) and records tonight's row."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime

RULES = ("listing", "quiet", "yield")


@dataclass(frozen=True)
class HealthCounters:
    """Which counters of a source's report are its health measures (flows/registry.py gives each source one)."""

    listed: str | None = "listed"           # what the upstream (or the replayed folder) listed
    parsed: str = "parsed"
    loaded: str = "loaded"
    yield_of: tuple[str, str] | None = None  # (numerator, denominator) counters of the parse yield
    yield_name: str = ""                     # what the yield counts, e.g. "paragraphs per judgment"


@dataclass
class Measures:
    """One source on one night."""

    listed: int | None
    fetched: int
    parsed: int
    loaded: int
    quarantined: int
    new: int
    changed: int
    yield_value: float | None = None
    yield_basis: int = 0                     # the denominator the yield was taken over (0: no yield tonight)
    yield_name: str = ""


def measures_of(counts: dict[str, int], spec: HealthCounters) -> Measures:
    """A source's measures from its stage counts (fetched: from upstream, or new payloads of a replayed folder)."""
    yield_value, basis = None, 0
    if spec.yield_of is not None:
        numerator, denominator = (int(counts.get(name, 0)) for name in spec.yield_of)
        if denominator > 0:
            yield_value, basis = numerator / denominator, denominator
    return Measures(
        listed=int(counts[spec.listed]) if spec.listed and spec.listed in counts else None,
        fetched=int(counts.get("fetched", 0) or counts.get("new_payloads", 0)),
        parsed=int(counts.get(spec.parsed, 0)), loaded=int(counts.get(spec.loaded, 0)),
        quarantined=int(counts.get("quarantined", 0)), new=int(counts.get("new", 0)),
        changed=int(counts.get("changed", 0)), yield_value=yield_value, yield_basis=basis, yield_name=spec.yield_name)


@dataclass(frozen=True)
class Night:
    """An earlier night of a source, as ops.source_health recorded it."""

    at: datetime
    listed: int | None
    new: int
    yield_value: float | None
    health: str                              # succeeded | warned | failed


@dataclass(frozen=True)
class Rules:
    listing_min_ratio: float
    yield_min_ratio: float
    quiet_gap_factor: float
    baseline_nights: int
    yield_min_basis: int
    actions: dict[str, str]                  # rule -> fail | warn


@dataclass
class Verdict:
    status: str = "succeeded"                # succeeded | warned | failed
    broken: list[str] = field(default_factory=list)     # "<rule>: <why>", one line each

    def add(self, rule: str, action: str, why: str) -> None:
        self.broken.append(f"{rule}: {why}")
        if action == "fail":
            self.status = "failed"
        elif self.status != "failed":
            self.status = "warned"


def judge(tonight: Measures, at: datetime, history: list[Night], rules: Rules) -> Verdict:
    """The rules on tonight's measures, against the earlier nights (newest first)."""
    verdict = Verdict()
    trusted = [n for n in history if n.health != "failed"]    # a failed night is no baseline
    listing = _listing(tonight, trusted, rules)
    if listing:
        verdict.add("listing", rules.actions["listing"], listing)
    quiet = _quiet(tonight, at, history, rules)
    if quiet:
        verdict.add("quiet", rules.actions["quiet"], quiet)
    dropped = _yield(tonight, trusted, rules)
    if dropped:
        verdict.add("yield", rules.actions["yield"], dropped)
    return verdict


def _listing(tonight: Measures, trusted: list[Night], rules: Rules) -> str | None:
    if tonight.listed is None:
        return None
    last = next((n for n in trusted if n.listed), None)
    if last is None or tonight.listed >= rules.listing_min_ratio * last.listed:
        return None
    share = tonight.listed / last.listed
    return (f"the upstream listed {tonight.listed:,}, {share:.0%} of the {last.listed:,} it listed on "
            f"{last.at:%Y-%m-%d} (the last night whose health did not fail; below {rules.listing_min_ratio:.0%})")


def _quiet(tonight: Measures, at: datetime, history: list[Night], rules: Rules) -> str | None:
    if tonight.new > 0:
        return None
    news = [n.at for n in history if n.new > 0][:rules.baseline_nights]
    if len(news) < 2:
        return None
    gaps = [(newer - older).total_seconds() / 86400 for newer, older in zip(news, news[1:])]
    usual = statistics.median(gaps)
    quiet_for = (at - news[0]).total_seconds() / 86400
    if usual <= 0 or quiet_for <= rules.quiet_gap_factor * usual:
        return None
    return (f"nothing new for {quiet_for:.1f} days (since {news[0]:%Y-%m-%d}), over {rules.quiet_gap_factor:g} times "
            f"its usual gap of {usual:.1f} days between nights with something new")


def _yield(tonight: Measures, trusted: list[Night], rules: Rules) -> str | None:
    if tonight.yield_value is None or tonight.yield_basis < rules.yield_min_basis:
        return None
    earlier = [n.yield_value for n in trusted if n.yield_value is not None][:rules.baseline_nights]
    if not earlier:
        return None
    baseline = statistics.median(earlier)
    if baseline <= 0 or tonight.yield_value >= rules.yield_min_ratio * baseline:
        return None
    return (f"{tonight.yield_name or 'the parse yield'} fell to {tonight.yield_value:.2f} over {tonight.yield_basis:,} "
            f"parsed tonight, from a baseline of {baseline:.2f} (the median of {len(earlier)} earlier "
            f"night{'s' if len(earlier) != 1 else ''}; below {rules.yield_min_ratio:.0%})")
