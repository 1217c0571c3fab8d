"""The warm worker (caseforge.runtime.warm_worker) in pieces: its launcher without a warm process becomes
`python -m prefect.engine`, so a worker whose warm process is not (or no longer) there runs flow runs cold, never
drops them; and the job configuration hands a run to the launcher only while a warm process waits, through
Prefect's own `prepare_for_flow_run` (no private name of Prefect's patched). The warm path itself runs against a
real server in tests/integration/test_llm_fanout_prefect.py."""
import os
import subprocess
import sys
from uuid import uuid4

import pytest
from prefect.client.schemas.objects import FlowRun

from caseforge.runtime.warm_worker.protocol import SOCKET_ENV
from caseforge.runtime.warm_worker.worker import WarmJobConfiguration


def test_without_a_warm_process_the_launcher_is_prefects_engine(tmp_path):
    env = {**os.environ, SOCKET_ENV: str(tmp_path / "absent.sock"), "PREFECT__FLOW_RUN_ID": "not-a-run"}
    done = subprocess.run([sys.executable, "-m", "caseforge.runtime.warm_worker.launch"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "Invalid flow run id" in done.stdout + done.stderr       # prefect.engine's own first check


class WarmProcessDouble:
    """Stands for caseforge.runtime.warm_worker.worker.WarmProcess: a warm process that waits (or not)."""
    path = "/run/caseforge-warm-test/runs.sock"
    launcher = "python -m caseforge.runtime.warm_worker.launch"

    def __init__(self, ready: bool):
        self._ready = ready

    def ready(self) -> bool:
        return self._ready


@pytest.fixture
def warm(monkeypatch):
    def set_warm(ready: bool | None):
        monkeypatch.setattr(WarmJobConfiguration, "warm", None if ready is None else WarmProcessDouble(ready))
    return set_warm


def prepared(command: str | None = None) -> WarmJobConfiguration:
    configuration = WarmJobConfiguration(command=command)
    configuration.prepare_for_flow_run(FlowRun(flow_id=uuid4(), name="shard-run"))
    return configuration


def test_a_run_goes_to_the_launcher_while_a_warm_process_waits(warm):
    warm(ready=True)
    configuration = prepared()
    assert configuration.command == WarmProcessDouble.launcher
    assert configuration.env[SOCKET_ENV] == WarmProcessDouble.path
    assert configuration.env["PREFECT__FLOW_RUN_ID"]               # Prefect's own environment of the run is kept
    # Prefect's record that the command was configured, which makes ProcessWorker.run start it as given (not its
    # workspace launcher): read here, private as it is, so that a Prefect that decides otherwise fails this test
    assert configuration._command_configured is True


@pytest.mark.parametrize("ready", [False, None])
def test_a_run_starts_cold_without_a_warm_process(warm, ready):
    warm(ready=ready)
    configuration = prepared()
    assert configuration.command.endswith("-m prefect.engine") and SOCKET_ENV not in configuration.env


def test_a_deployments_own_command_is_left_as_it_is(warm):
    warm(ready=True)
    configuration = prepared(command="python my_launcher.py")
    assert configuration.command == "python my_launcher.py" and SOCKET_ENV not in configuration.env
