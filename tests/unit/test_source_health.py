"""Source health's rules (caseforge/source_health.py) on tonight's measures against earlier nights, its settings,
and the nightly's `source health` stage with test-double sources: a broken rule is a stage result in the summary
and `status`, and a failed one holds back the releases made from that source."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from caseforge.cli.status import status_data
from caseforge.flows import nightly_runner
from caseforge.settings import SettingsError, load_settings
from caseforge.settings_tables import SourceHealthTable
from caseforge.source_health import HealthCounters, Measures, Night, judge, measures_of
from caseforge.stage_report import StageReport
from caseforge.warehouse.connection import connect
from caseforge.flows.nightly_health import rules_for

from registry_doubles import BuilderDouble, ReleaseDouble, SourceDouble

NOW = datetime(2026, 11, 28, 3, 0, tzinfo=timezone.utc)
RULES = rules_for(SourceHealthTable(), "hudoc")


def night(days_ago: float, listed=100, new=5, yield_value=30.0, health="succeeded") -> Night:
    return Night(NOW - timedelta(days=days_ago), listed, new, yield_value, health)


def tonight(listed=100, new=5, yield_value=30.0, basis=10) -> Measures:
    return Measures(listed, 10, basis, basis, 0, new, 0, yield_value, basis, "paragraphs per judgment")


def test_a_listing_cut_to_a_tenth_or_to_nothing_breaks_the_listing_rule():
    history = [night(1, listed=1000), night(2, listed=990)]
    verdict = judge(tonight(listed=100), NOW, history, RULES)
    assert verdict.status == "failed" and len(verdict.broken) == 1
    assert verdict.broken[0].startswith("listing: the upstream listed 100, 10% of the 1,000 it listed on 2026-11-27")
    assert judge(tonight(listed=0), NOW, history, RULES).status == "failed"
    assert judge(tonight(listed=600), NOW, history, RULES).status == "succeeded"      # over half: an ordinary night
    assert judge(tonight(listed=0), NOW, [], RULES).status == "succeeded"             # no earlier night: no verdict


def test_a_failed_night_is_no_baseline():
    """After a night whose listing failed, the next is still compared with the last night that did not fail."""
    history = [night(1, listed=0, health="failed"), night(2, listed=1000)]
    assert judge(tonight(listed=0), NOW, history, RULES).status == "failed"


def test_nothing_new_on_a_usual_gap_is_green_and_far_beyond_it_warns():
    history = [night(1), night(2), night(3), night(4)]               # something new every night
    assert judge(tonight(new=0), NOW, history, RULES).status == "succeeded"     # one quiet night: a normal gap
    quiet = [night(d, new=0) for d in (1, 2, 3, 4)] + [night(5), night(6), night(7)]
    verdict = judge(tonight(new=0), NOW, quiet, RULES)
    assert verdict.status == "warned", verdict                                 # on_quiet = "warn" by default
    assert verdict.broken == ["quiet: nothing new for 5.0 days (since 2026-11-23), over 3 times its usual gap of "
                              "1.0 days between nights with something new"]
    weekly = [night(d, new=0 if d % 7 else 5) for d in range(1, 22)]           # news once a week
    assert judge(tonight(new=0), NOW, weekly, RULES).status == "succeeded"


def test_a_layout_change_that_parses_each_judgment_into_one_paragraph_breaks_the_yield_rule():
    history = [night(1, yield_value=31.0), night(2, yield_value=28.5), night(3, yield_value=30.0)]
    verdict = judge(tonight(yield_value=1.0, basis=4), NOW, history, RULES)
    assert verdict.status == "failed"
    assert verdict.broken == ["yield: paragraphs per judgment fell to 1.00 over 4 parsed tonight, from a baseline of "
                              "30.00 (the median of 3 earlier nights; below 50%)"]
    assert judge(tonight(yield_value=1.0, basis=2), NOW, history, RULES).status == "succeeded"   # too few to judge
    assert judge(tonight(yield_value=20.0), NOW, history, RULES).status == "succeeded"


def test_settings_choose_each_rules_action_and_a_source_may_have_its_own():
    table = SourceHealthTable(on_listing="warn", sources={"oyez": {"listing_min_ratio": 0.05, "on_listing": "fail"}})
    history = [night(1, listed=1000)]
    assert judge(tonight(listed=100), NOW, history, rules_for(table, "hudoc")).status == "warned"
    assert judge(tonight(listed=100), NOW, history, rules_for(table, "oyez")).status == "succeeded"
    assert judge(tonight(listed=10), NOW, history, rules_for(table, "oyez")).status == "failed"


def test_an_unknown_key_or_action_in_source_health_is_an_error(tmp_path, monkeypatch):
    config = tmp_path / "caseforge.toml"
    config.write_text('[source_health]\nlisting_min_ration = 0.5\n')
    monkeypatch.setenv("CASEFORGE_CONFIG", str(config))
    with pytest.raises(SettingsError, match="listing_min_ration.*listing_min_ratio"):
        load_settings().file
    config.write_text('[source_health.sources.hudoc]\non_yield = "shout"\n')
    with pytest.raises(SettingsError, match="on_yield"):
        load_settings().file


def test_an_unknown_source_in_source_health_is_named(tmp_path, monkeypatch):
    from caseforge.flows.settings_check import settings_problems

    config = tmp_path / "caseforge.toml"
    config.write_text('[source_health.sources.hudok]\nlisting_min_ratio = 0.2\n')
    [problem] = settings_problems(config)
    assert "hudok" in problem and "hudoc" in problem


def test_measures_come_from_the_sources_own_counters():
    spec = HealthCounters(parsed="documents_parsed", loaded="judgments_loaded",
                          yield_of=("paragraphs_parsed", "documents_parsed"), yield_name="paragraphs per judgment")
    m = measures_of({"listed": 7, "fetched": 9, "documents_parsed": 4, "paragraphs_parsed": 120,
                     "judgments_loaded": 4, "quarantined": 1, "new": 4}, spec)
    assert (m.listed, m.fetched, m.parsed, m.loaded, m.quarantined, m.new, m.yield_value, m.yield_basis) == \
        (7, 9, 4, 4, 1, 4, 30.0, 4)
    assert measures_of({"fetched": 2}, spec).yield_value is None                     # nothing parsed: no yield


# ---- the stage in the nightly, with test-double sources --------------------------------------------------------

def listing_source(listed: list[int]):
    """Test double of a source: tonight's listing is the next of `listed`; it writes nothing."""

    def refresh(settings, **kwargs):
        report = StageReport("double")
        report.add("listed", listed.pop(0))
        report.add("new", 0)
        return report

    return SourceDouble("alpha", "alpha (double)", None, archive_source="alpha", outputs=("curated.alpha",),
                        health=HealthCounters(), refresh=refresh)


def test_a_failed_source_health_is_a_stage_result_and_holds_back_the_release_made_from_it(tmp_path):
    settings = load_settings(tmp_path / "cf.duckdb")
    con = connect(settings.db_path)
    con.execute("CREATE TABLE curated.alpha (id INTEGER)")
    con.execute("INSERT INTO curated.alpha VALUES (1)")
    con.close()
    built = []
    builder = BuilderDouble("alpha_items", "(double)", None, inputs=("curated.alpha",), outputs=("curated.alpha_items",),
                            nightly=True, builder=lambda settings, **_: built.append(1) or StageReport("b"))
    written = []
    release = ReleaseDouble("items", "(double)", None, inputs=("curated.alpha_items",),
                            writer=lambda con, folder: written.append(folder))
    kwargs = {"sources": {"alpha": listing_source([1000, 100])}, "builders": {"alpha_items": builder},
              "evaluations": {}, "releases": {"items": release}, "plots": {}}
    con = connect(settings.db_path)
    con.execute("CREATE TABLE curated.alpha_items (id INTEGER)")
    con.execute("INSERT INTO curated.alpha_items VALUES (1)")
    con.close()

    first = nightly_runner.run_nightly(settings, **kwargs)
    health = {o.name: o for o in first.outcomes if o.stage == "source health"}
    assert health["alpha"].status == "succeeded" and first.ok and len(written) == 1

    second = nightly_runner.run_nightly(settings, **kwargs)
    health = {o.name: o for o in second.outcomes if o.stage == "source health"}
    assert health["alpha"].status == "failed" and not second.ok
    assert second.failures() == ["source health alpha: listing: the upstream listed 100, 10% of the 1,000 it listed on "
                                 f"{datetime.now(timezone.utc):%Y-%m-%d} (the last night whose health did not fail; "
                                 "below 50%)"]
    [export] = [o for o in second.outcomes if o.stage == "export"]
    assert export.status == "skipped" and len(written) == 1
    assert export.note == ("held back: curated.alpha_items comes from builder alpha_items, which reads curated.alpha "
                           "from source health alpha, which failed tonight (listing: the upstream listed 100, 10% of "
                           f"the 1,000 it listed on {datetime.now(timezone.utc):%Y-%m-%d} (the last night whose health "
                           "did not fail; below 50%))")
    summary = (second.run_dir / "summary.md").read_text()
    assert "## Source health" in summary and "| alpha | failed | listing: the upstream listed 100" in summary

    con = connect(settings.db_path)
    try:
        shown = status_data(con, limit=5)
        rows = con.execute("SELECT run_id, listed, health FROM ops.source_health ORDER BY run_id").fetchall()
    finally:
        con.close()
    stages = {(s["stage"], s["name"]): s for s in shown["last_nightly_stages"]}
    assert stages[("source health", "alpha")]["status"] == "failed"
    assert "listing: the upstream listed 100" in stages[("source health", "alpha")]["message"]
    assert rows == [(first.run_id, 1000, "succeeded"), (second.run_id, 100, "failed")]
    assert json.loads(json.dumps(shown, default=str))["runs"][0]["status"] == "failed"


def test_the_failure_notification_names_a_failed_source_health_and_any_warning(tmp_path):
    """The Failed run's message is what the notification sends (flows/notifications.py): it names the failed
    `source health` stage with its broken rule, and a stage that only warned."""
    from caseforge.flows.nightly import failed_message
    from caseforge.flows.nightly_runner import NightlyResult, StageOutcome

    result = NightlyResult(7, [
        StageOutcome("source", "hudoc", "succeeded"),
        StageOutcome("source health", "hudoc", "failed", failures=["listing: the upstream listed 0, 0% of the 4"],
                     note="listing: the upstream listed 0, 0% of the 4; listed 0"),
        StageOutcome("source health", "cn", "warned", note="quiet: nothing new for 9.0 days")], tmp_path)
    assert failed_message(result) == (
        "nightly 7: 1 stage(s) failed (source health hudoc), 1 problem(s): source health hudoc failed: listing: the "
        "upstream listed 0, 0% of the 4; warned: source health cn warned: quiet: nothing new for 9.0 days")
