"""`caseforge run nightly --plan` foresees what the next nightly runs (issue 40): on real Oyez files, before the
first nightly, right after one, and after one new case file, the plan's "would run" list is what the next
nightly then runs, and reading the plan writes nothing (no run record, the warehouse file unchanged)."""
import hashlib
import shutil

import pytest
from oyez_subset import link_oyez_subset

from caseforge.flows import nightly_runner, registry
from caseforge.flows.nightly_forecast import forecast, would_rebuild
from caseforge.settings import load_settings
from caseforge.stage_report import StageReport
from caseforge.tasks.oyez.ingest import refresh as oyez_refresh
from caseforge.warehouse.connection import connect

from registry_doubles import BuilderDouble, SourceDouble

pytestmark = [pytest.mark.samples, pytest.mark.slow]
CASES = 5


def counting_builder(settings, **options):
    """A builder double that needs no model: reads its input and reports."""
    with connect(settings.db_path) as con:
        cases = con.execute("SELECT count(*) FROM curated.scotus_cases").fetchone()[0]
    return StageReport(name="counter", counts={"items": cases})


def test_the_plan_foresees_what_the_next_nightly_runs(samples_dir, tmp_path):
    root = link_oyez_subset(samples_dir, tmp_path / "samples", CASES, 20)
    oyez = registry.SOURCES["oyez"]
    stages = {"sources": {"oyez": SourceDouble("oyez", oyez.description, None, outputs=oyez.outputs,
                                               archive_source="oyez", samples=oyez.samples, refresh=oyez_refresh)},
              "builders": {"counter": BuilderDouble("counter", "", None, inputs=("curated.scotus_cases",),
                                                    builder=counting_builder)},
              "evaluations": {}, "releases": {"scotus": registry.RELEASES["scotus"]}}
    settings = load_settings(tmp_path / "cf.duckdb")
    options = nightly_runner.NightlyOptions(from_samples=True, samples_dir=root, release_dir=tmp_path / "releases")

    def plan_then_nightly():
        before = hashlib.sha256(settings.db_path.read_bytes()).hexdigest() if settings.db_path.exists() else None
        foreseen = forecast(settings, options, **stages)
        after = hashlib.sha256(settings.db_path.read_bytes()).hexdigest() if settings.db_path.exists() else None
        assert before == after, "reading the plan wrote to the warehouse"
        result = nightly_runner.run_nightly(settings, options, plots={}, **stages)
        assert result.ok, result.failures()
        return {f.key: (f.would, f.why) for f in foreseen}, would_rebuild(foreseen), result.rebuilt(), result.run_id

    first, would, ran, first_run = plan_then_nightly()
    assert would == ran == ["builder counter", "export scotus"]
    assert first["source oyez"] == ("run", f"replays {CASES + 1} file(s), never replayed to success before")

    second, would, ran, second_run = plan_then_nightly()
    assert would == ran == []
    assert second["source oyez"] == ("run", f"replays {CASES + 1} file(s), unchanged since run {first_run}: its tables stay "
                                            "as they are")
    assert second["builder counter"] == ("skip", f"inputs unchanged since run {first_run}")

    new_case = sorted((samples_dir / "oyez" / "cases").glob("*.json"))[CASES]
    shutil.copy(new_case, root / "oyez" / "cases" / new_case.name)
    third, would, ran, _ = plan_then_nightly()
    assert would == ran == ["builder counter", "export scotus"]
    assert third["source oyez"] == ("run", f"replays {CASES + 2} file(s): 1 new (oyez/cases/{new_case.name}) "
                                           f"since run {second_run}")
    assert third["builder counter"] == ("run", "source oyez changes curated.scotus_cases tonight")
    with connect(settings.db_path, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM ops.runs WHERE kind = 'nightly'").fetchone() == (3,)
