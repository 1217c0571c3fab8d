"""Every stage of the nightly is a task run on the loopback Prefect server (issue 45): a failed stage is a Failed
task run (red in the UI) whose state message is the stage's one line, a skipped one a Completed task run with its
reason as its message; the nightly is named `nightly-<run id>`, a stage's subflow `nightly-<run id> <stage>`, under
the stage's own task run (no `<flow>-<uuid>` task run of Prefect's beside it). Read back through the client."""
import json

import pytest
from prefect import flow, task

from caseforge.flows import nightly, nightly_runner, registry
from caseforge.flows.states import final_state
from caseforge.settings import load_settings
from caseforge.stage_report import StageReport

from nightly_problem_doubles import alpha_source
from registry_doubles import BuilderDouble, ReleaseDouble, SourceDouble

pytestmark = [pytest.mark.slow]


def unreachable_source(settings, **kwargs):
    raise ConnectionError("host upstream.test unreachable")


def counting_builder(settings, **kwargs):
    return StageReport(name="counter")


@task(name="judge-step")
def judge_step() -> int:
    return 0                              # every task of the subflow below ends Completed


@flow(name="judge-build")
def judge_build(db: str):
    """A subflow whose task runs all end green while it fails: only its state message can say why."""
    judge_step()
    report = StageReport(name="build judge")
    report.fail("the judge answered nothing for 3 items")
    return final_state(report)


def release_writer(con, folder):
    folder.mkdir(parents=True, exist_ok=True)


def test_every_stage_is_a_named_task_run_and_a_failed_one_says_why(prefect_server, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, FlowRunFilterParentFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from caseforge.flows.wiring import install

    install()                                  # as a command's flows_session does: runs are named
    sources = {"alpha": SourceDouble("alpha", "", None, archive_source="alpha", outputs=("curated.alpha",),
                                     refresh=alpha_source),
               "down": SourceDouble("down", "", None, archive_source="down", refresh=unreachable_source)}
    builders = {"counter": BuilderDouble("counter", "", None, inputs=("curated.alpha",), builder=counting_builder),
                "judge": registry.Builder("judge", "", lambda: judge_build, inputs=("curated.alpha",),
                                          outputs=("curated.judged",))}
    releases = {"alpha": ReleaseDouble("alpha", "", None, inputs=("curated.alpha",), writer=release_writer),
                "judged": ReleaseDouble("judged", "", None, inputs=("curated.judged",), writer=release_writer)}

    @flow(name="nightly-task-states")
    def nightly_with_doubles(db: str):
        result = nightly_runner.run_nightly(load_settings(db), nightly_runner.NightlyOptions(release_dir=tmp_path / "rel"),
                                            map_parallel=nightly.prefect_parallel, run_stage=nightly.prefect_stage,
                                            sources=sources, builders=builders, evaluations={}, releases=releases,
                                            plots={})
        return json.loads(json.dumps(result.to_dict(), default=str))

    with temporary_settings({PREFECT_API_URL: f"{prefect_server.url}/api"}):
        state = nightly_with_doubles(str(tmp_path / "cf.duckdb"), return_state=True)
        data = state.result()
        flow_run_id = state.state_details.flow_run_id
        with get_client(sync_client=True) as client:
            task_runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            nightly_run = client.read_flow_run(flow_run_id)
            children = client.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id])))
    states = {run.name: run.state.type.value for run in task_runs}
    messages = {run.name: run.state.message for run in task_runs}

    assert nightly_run.name == f"nightly-{data['run_id']}"
    stages = {f"{s['stage']}-{s['name']}" for s in data["stages"]}
    assert set(states) == stages, states                        # every stage of the summary, and nothing else
    assert states == {"source-alpha": "COMPLETED", "source-down": "FAILED", "builder-counter": "COMPLETED",
                      "builder-judge": "FAILED", "export-alpha": "COMPLETED", "export-judged": "COMPLETED"}, states
    assert messages["source-down"] == "source down failed: ConnectionError: host upstream.test unreachable"
    assert messages["builder-judge"] == "builder judge failed: the judge answered nothing for 3 items"
    assert messages["export-judged"] == ("export judged skipped: held back: curated.judged comes from builder "
                                         "judge, which failed tonight")
    assert all("Failed(" not in (m or "") and "NoneType" not in (m or "") for m in messages.values()), messages

    [subflow] = children                                        # the judge's flow, under its stage's task run
    by_id = {run.id: run.name for run in task_runs}
    assert subflow.name == f"nightly-{data['run_id']} builder-judge"
    assert by_id[subflow.parent_task_run_id] == "builder-judge"
    assert subflow.state.type.value == "FAILED"
    assert subflow.state.message == "build judge: failed: 1 problem(s), first: the judge answered nothing for 3 items"


def test_a_commands_flow_run_is_named_for_its_run(prefect_server, tmp_path):
    """A single command's flow run is `<kind>-<target>-<run id>`, the id `caseforge status` shows (issue 45)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from caseforge.flows.wiring import install
    from caseforge.session import run_session

    install()

    @flow(name="ingest-double")
    def ingest(db: str) -> int:
        with run_session(load_settings(db), "ingest", "alpha") as session:
            return session.run_id

    with temporary_settings({PREFECT_API_URL: f"{prefect_server.url}/api"}):
        state = ingest(str(tmp_path / "cf.duckdb"), return_state=True)
        with get_client(sync_client=True) as client:
            name = client.read_flow_run(state.state_details.flow_run_id).name
    assert name == f"ingest-alpha-{state.result()}"
