"""Every stage of the nightly is a task run on the loopback Prefect server, and a failed stage is a Failed
task run (red in the UI) while the others go on: read back through the Prefect client."""
import json

import pytest

from caseforge.flows import nightly, nightly_runner
from caseforge.settings import load_settings
from caseforge.stage_report import StageReport

from nightly_problem_doubles import alpha_source
from registry_doubles import SourceDouble, BuilderDouble, ReleaseDouble

pytestmark = [pytest.mark.slow]


def unreachable_source(settings, **kwargs):
    raise ConnectionError("host upstream.test unreachable")


def counting_builder(settings, **kwargs):
    return StageReport(name="counter")


def failing_builder(settings, **kwargs):
    report = StageReport(name="broken")
    report.fail("the judge answered nothing")
    return report


def release_writer(con, folder):
    folder.mkdir(parents=True, exist_ok=True)


def test_failed_stages_are_failed_task_runs_and_the_others_complete(prefect_server, tmp_path, monkeypatch):
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    sources = {"alpha": SourceDouble("alpha", "", None, archive_source="alpha", refresh=alpha_source),
               "down": SourceDouble("down", "", None, archive_source="down", refresh=unreachable_source)}
    builders = {"counter": BuilderDouble("counter", "", None, inputs=("curated.alpha",), nightly=True,
                                         builder=counting_builder),
                "broken": BuilderDouble("broken", "", None, inputs=("curated.alpha",), nightly=True,
                                        builder=failing_builder)}
    releases = {"alpha": ReleaseDouble("alpha", "", None, inputs=("curated.alpha",), writer=release_writer)}

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
        with get_client(sync_client=True) as client:
            task_runs = client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id])))
    states = {run.name: run.state.type.value for run in task_runs}
    messages = {run.name: run.state.message for run in task_runs}

    assert states == {"source-alpha": "COMPLETED", "source-down": "FAILED", "builder-counter": "COMPLETED",
                      "builder-broken": "FAILED", "export-alpha": "COMPLETED"}, states
    assert "host upstream.test unreachable" in messages["source-down"]
    assert "the judge answered nothing" in messages["builder-broken"]
    assert sorted(data["failures"]) == ["builder broken: the judge answered nothing",
                                        "source down: ConnectionError: host upstream.test unreachable"]
    statuses = {(s["stage"], s["name"]): s["status"] for s in data["stages"]}
    assert statuses[("export", "alpha")] == "succeeded"      # the release's inputs come from a stage that ran fine
