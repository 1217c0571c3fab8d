"""The nightly's `source health` stage: after the sources, each source that ran is judged by caseforge/source_health.py's
rules against its earlier nights (ops.source_health) and tonight's row recorded; one outcome per source, warned
or failed when a rule broke. What a failed one holds back (its tables, what is made from them, and so the
releases) is the plan's rule: caseforge.flows.nightly_plan.Plan.held_back."""
from __future__ import annotations

import time
from datetime import datetime, timezone

from caseforge.flows import registry
from caseforge.flows.stage_outcome import StageOutcome
from caseforge.settings_tables import SourceHealthTable
from caseforge.source_health import RULES, Measures, Night, Rules, judge, measures_of
from caseforge.warehouse.statements import run_sql

STAGE = "source health"
JUDGED = ("succeeded", "quarantined")          # a source that did not finish is recorded, not judged


def rules_for(table: SourceHealthTable, source: str) -> Rules:
    values = table.for_source(source)
    return Rules(values["listing_min_ratio"], values["yield_min_ratio"], values["quiet_gap_factor"],
                 values["baseline_nights"], values["yield_min_basis"], {rule: values[f"on_{rule}"] for rule in RULES})


def measures_text(m: Measures) -> str:
    """'listed 4, fetched 4, parsed 4, loaded 4, quarantined 0, new 4; paragraphs per judgment 86.5 over 4'."""
    text = ", ".join(f"{name} {value:,}" for name, value in (
        ("listed", m.listed), ("fetched", m.fetched), ("parsed", m.parsed), ("loaded", m.loaded),
        ("quarantined", m.quarantined), ("new", m.new)) if value is not None)
    if m.yield_value is not None:
        text += f"; {m.yield_name} {m.yield_value:.2f} over {m.yield_basis:,}"
    return text


def source_health(con, run_id: int, sources: dict[str, registry.Source], outcomes: list[StageOutcome],
                  table: SourceHealthTable, now: datetime | None = None) -> list[StageOutcome]:
    """One `source health` outcome per source that ran tonight (and has health counters), its row recorded."""
    at = now or datetime.now(timezone.utc)
    judged = []
    for outcome in outcomes:
        source = sources.get(outcome.name)
        if outcome.stage != "source" or outcome.status == "skipped" or source is None or source.health is None:
            continue
        started = time.monotonic()
        tonight = measures_of(outcome.counts, source.health)
        rules = rules_for(table, source.name)
        if outcome.status in JUDGED:
            history = [Night(*row) for row in run_sql(con, "ops/source_health_history.sql",
                                                      [source.name, run_id, 4 * rules.baseline_nights]).fetchall()]
            verdict = judge(tonight, at, history, rules)
            status, broken = verdict.status, verdict.broken
        else:
            status, broken = "not_judged", []
        run_sql(con, "ops/record_source_health.sql", [
            run_id, source.name, at, outcome.status, tonight.listed, tonight.fetched, tonight.parsed, tonight.loaded,
            tonight.quarantined, tonight.new, tonight.changed, tonight.yield_name or None, tonight.yield_value,
            tonight.yield_basis, status, "\n".join(broken) or None])
        if status == "not_judged":
            continue
        note = "; ".join(broken + [measures_text(tonight)])
        counts = {"listed": tonight.listed or 0, "parsed": tonight.parsed, "loaded": tonight.loaded}
        judged.append(StageOutcome(STAGE, source.name, status, counts, time.monotonic() - started,
                                   broken if status == "failed" else [], note))
    return judged


def judge_source(night, source: registry.Source, table: SourceHealthTable) -> StageOutcome:
    """The `source health` stage of one source (caseforge.flows.nightly_plan): tonight's outcome of the source
    judged; skipped when the source did not run or did not finish."""
    ran = next((o for o in night.outcomes if o.stage == "source" and o.name == source.name), None)
    if ran is None or ran.status == "skipped":
        return StageOutcome(STAGE, source.name, "skipped", note="the source did not run tonight")
    judged = source_health(night.connection(), night.run_id, {source.name: source}, [ran], table)
    return judged[0] if judged else StageOutcome(STAGE, source.name, "skipped",
                                                 note=f"not judged: the source ended {ran.status}")
