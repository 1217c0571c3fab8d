"""The nightly as a declared plan: stages are data, the runner walks them wave after wave, and "a stage that holds
is held back when a stage writing or checking one of its inputs failed" is one rule of the plan, so a new kind of
stage (a source health check, issue 43) is one entry and its function."""
import pytest

from caseforge.flows import nightly_plan, nightly_runner
from caseforge.flows.nightly_plan import Plan, PlanError, Stage
from caseforge.settings import load_settings
from caseforge.stage_report import StageReport

from nightly_problem_doubles import alpha_source
from registry_doubles import BuilderDouble, ReleaseDouble, SourceDouble


def nothing(night):
    return StageReport(name="nothing")


def test_the_plan_runs_in_waves_of_what_each_stage_waits_for():
    plan = Plan([Stage("source", "a", nothing, outputs=("curated.a",), parallel=True),
                 Stage("source", "b", nothing, parallel=True),
                 Stage("builder", "x", nothing, inputs=("curated.a",), outputs=("curated.x",), after=("source",)),
                 Stage("evaluation", "y", nothing, after=("source", "builder")),
                 Stage("export", "x", nothing, inputs=("curated.x",), after=("builder", "evaluation"), holds=True)])
    assert [[s.key for s in wave] for wave in plan.waves()] == [
        ["source a", "source b"], ["builder x"], ["evaluation y"], ["export x"]]


@pytest.mark.parametrize("stages, problem", [
    ([Stage("builder", "x", nothing, after=("sauce",))], "builder x waits for 'sauce', which is no kind nor stage"),
    ([Stage("source", "a", nothing, outputs=("curated.a",)), Stage("export", "a", nothing, inputs=("curated.a",),
                                                                   holds=True)],
     "export a reads curated.a from source a but does not wait for it"),
    ([Stage("builder", "x", nothing, after=("builder y",)), Stage("builder", "y", nothing, after=("builder x",))],
     "the plan waits in a circle: builder x → builder y → builder x"),
])
def test_a_plan_that_cannot_run_as_declared_is_refused(stages, problem):
    with pytest.raises(PlanError, match=problem.replace("(", r"\(")):
        Plan(stages)


def test_the_registry_plan_waits_as_the_nightly_always_ran(tmp_path):
    settings = load_settings(tmp_path / "cf.duckdb")
    plan = nightly_plan.build_plan(settings, nightly_plan.NightlyOptions(), **nightly_plan.registry_stages(),
                                   release_dir=tmp_path / "releases")
    kinds = [sorted({s.kind for s in wave}) for wave in plan.waves()]
    assert kinds == [["source"], ["source", "source health"], ["builder", "source health"], ["evaluation"], ["export"]]
    assert all(s.parallel for s in plan.waves()[0]) and all(s.holds for s in plan.waves()[-1])


def test_a_source_that_reads_another_sources_table_waits_for_it(tmp_path):
    """The guides resolve their citations against curated.echr_judgments: run beside HUDOC, the first night's
    resolutions depended on which thread came first, and the next night parsed every guide again (its judgments had
    changed under it: tests/samples/test_nightly_samples.py's second night, the gate's import and all). Without
    HUDOC tonight the guides read what is stored and run in the first wave."""
    settings = load_settings(tmp_path / "cf.duckdb")

    def plan_of(sources):
        return nightly_plan.build_plan(settings, nightly_plan.NightlyOptions(sources=sources),
                                       **nightly_plan.registry_stages(), release_dir=tmp_path / "releases")

    plan = plan_of(None)
    guides = plan.by_key["source guides"]
    assert [s.key for s in plan.waits_for(guides)] == ["source hudoc"] and guides.inputs == ("curated.echr_judgments",)
    assert [s.key for s in plan.waves()[0]] == ["source barexam", "source cn", "source hudoc", "source oyez"]
    assert [s.key for s in plan.waves()[1] if s.kind == "source"] == ["source guides"]
    alone = plan_of(["guides", "oyez"])
    assert [s.key for s in alone.waves()[0]] == ["source guides", "source oyez"]


def failing_health(night):
    report = StageReport(name="health alpha")
    report.fail("alpha brought 0 rows tonight, its usual is 1 (a rule of the source health check)")
    return report


def test_a_new_stage_is_one_entry_and_a_failed_one_holds_back_the_releases_reading_what_it_checks(
        tmp_path, monkeypatch):
    """A `health` stage declared as issue 43 will (after the sources, checking alpha's table): when it fails, the
    release of alpha is held back with one line, and a release reading another table is written."""
    real = nightly_plan.build_plan

    def with_health(*args, **kwargs):
        plan = real(*args, **kwargs)
        health = Stage("health", "alpha", failing_health, checks=("curated.alpha",), after=("source",))
        return Plan([*plan.stages[:1], health, *plan.stages[1:]])

    monkeypatch.setattr(nightly_runner, "build_plan", with_health)
    written = []

    def writer(con, folder):
        written.append(folder.name)
        folder.mkdir(parents=True)

    def other_table(settings, **kwargs):
        from caseforge.warehouse.connection import connect

        with connect(settings.db_path) as con:
            con.execute("CREATE TABLE curated.other AS SELECT 1 AS id")
        return StageReport(name="other")

    result = nightly_runner.run_nightly(
        load_settings(tmp_path / "cf.duckdb"), nightly_runner.NightlyOptions(release_dir=tmp_path / "rel"),
        sources={"alpha": SourceDouble("alpha", "", None, archive_source="alpha", outputs=("curated.alpha",),
                                       refresh=alpha_source)},
        builders={"other": BuilderDouble("other", "", None, outputs=("curated.other",), builder=other_table)},
        evaluations={}, plots={},
        releases={"alpha": ReleaseDouble("alpha", "", None, inputs=("curated.alpha",), writer=writer),
                  "other": ReleaseDouble("other", "", None, inputs=("curated.other",), writer=writer)})
    stages = {(o.stage, o.name): o for o in result.outcomes}
    assert stages[("health", "alpha")].status == "failed"
    assert (stages[("export", "alpha")].status, stages[("export", "alpha")].note) == (
        "skipped", "held back: curated.alpha comes from health alpha, which failed tonight")
    assert stages[("export", "other")].status == "succeeded" and written == ["other"]
    assert [o.stage for o in result.outcomes] == ["source", "health", "builder", "export", "export"]


def test_run_nightly_plan_says_what_would_run_and_writes_nothing(tmp_path, capsys):
    """`caseforge run nightly --plan` before any nightly: every stage of the registry's plan, live (the sources'
    upstream unseen: the stages reading them `maybe`), and no warehouse, run record or Prefect run made."""
    from caseforge.cli import main

    db = tmp_path / "cf.duckdb"
    assert main(["run", "nightly", "--plan", "--db", str(db), "--release-dir", str(tmp_path / "rel")]) == 0
    out = capsys.readouterr().out
    assert list(tmp_path.iterdir()) == [], "reading the plan wrote something"
    rows = {tuple(cell.strip() for cell in line.split("|")[:3]) for line in out.splitlines() if "|" in line}
    assert ("source", "oyez", "run") in rows and ("source", "cn", "skip") in rows
    assert ("builder", "casefacts", "maybe") in rows and ("export", "scotus", "maybe") in rows
    assert ("builder", "casegen", "skip") in rows           # curated.cn_judgments: only `ingest cn` writes it
    assert out.splitlines()[-1].startswith("would rebuild: nothing; maybe: builder aquaechr, builder casefacts"), out


def test_a_stage_says_itself_in_one_line():
    """The line a stage's task run ends with (its state message), the terminal prints and a notification carries:
    a reason that names no record, whole on one line; records only counted (the problems table lists them)."""
    from caseforge.flows.nightly_runner import StageOutcome

    assert StageOutcome("source", "hudoc", "failed", failures=["ConnectionError: host\nhudoc down"]).line() == \
        "source hudoc failed: ConnectionError: host hudoc down"
    assert StageOutcome("builder", "x", "quarantined", failures=[
        "casefacts_generated claim_id=c1: expect_column_values_to_have_enough_words on claim"]).line() == \
        "builder x quarantined: 1 problem (in the night's problems)"
    assert StageOutcome("export", "scotus", "skipped", note="inputs unchanged").line() == \
        "export scotus skipped: inputs unchanged"
    assert StageOutcome("source", "guides", "failed", failures=["guide a: host down", "guide b: host down"]).line() \
        == "source guides failed: 2 problems (first: guide a: host down; last: guide b: host down)"
    assert len(StageOutcome("source", "a", "failed", failures=["x" * 1000]).line()) < 340


class ServerRecordingLateDouble:
    """A Prefect client double whose server records the task run only after `late` reads (Prefect 3 records task
    runs from their events: a subflow created naming it as parent before that was refused, 409, measured)."""

    def __init__(self, late: int):
        self.late, self.reads = late, 0

    def read_task_run(self, task_run_id):
        from prefect.exceptions import ObjectNotFound

        self.reads += 1
        if self.reads <= self.late:
            raise ObjectNotFound(http_exc=None)
        return {"id": task_run_id}


def test_a_stage_subflow_waits_until_its_task_run_is_recorded(monkeypatch):
    from caseforge.flows import states

    client = ServerRecordingLateDouble(late=3)
    assert states._recorded(client, "t1") is True and client.reads == 4
    monkeypatch.setattr(states, "TASK_RUN_RECORDED_S", 0.3)
    never = ServerRecordingLateDouble(late=10**6)
    assert states._recorded(never, "t1") is False            # then the subflow goes Prefect's own way, named
