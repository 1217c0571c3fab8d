"""The local Prefect server's bookkeeping (caseforge.runtime.local_server) without starting a server: what a
command does with the state file it finds, stale state, leases, settings; and which server a command's
flows report to (caseforge.runtime.prefect_api.prefect_api)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from caseforge.runtime import local_server, prefect_api
from caseforge.runtime.local_server import Paths, decide

IDENTITY = {"prefect_version": "3.8.8", "database": "abc"}


def test_no_state_or_a_dead_process_means_start():
    assert decide(None, False, IDENTITY) == "start"
    assert decide({"pid": 1, "status": "ready", **IDENTITY}, False, IDENTITY) == "start"


def test_a_ready_server_of_this_version_and_database_is_reused():
    assert decide({"pid": 1, "status": "ready", **IDENTITY}, True, IDENTITY) == "reuse"
    assert decide({"pid": 1, "status": "starting", **IDENTITY}, True, IDENTITY) == "wait"


@pytest.mark.parametrize("other", [{"prefect_version": "3.9.1"}, {"database": "def"}, {"prefect_version": None}])
def test_a_server_of_another_prefect_version_or_database_is_not_reused(other):
    assert decide({"pid": 1, "status": "ready", **IDENTITY, **other}, True, IDENTITY) == "foreign"


def _dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_a_state_file_naming_a_gone_process_is_stale_and_stop_removes_it(tmp_path):
    paths = Paths.of(tmp_path)
    paths.home.mkdir(parents=True)
    paths.state.write_text(json.dumps({"pid": _dead_pid(), "status": "ready", "api_url": "http://127.0.0.1:9/api"}))
    assert local_server.status(tmp_path) is None
    assert local_server.stop(tmp_path) == "stale"
    assert not paths.state.exists()
    assert local_server.stop(tmp_path) == "none"


def test_a_live_process_that_is_not_the_server_is_not_owned(tmp_path):
    """A pid reused by another process (here: this test's own) is not taken for the server, never signalled."""
    paths = Paths.of(tmp_path)
    paths.home.mkdir(parents=True)
    paths.state.write_text(json.dumps({"pid": os.getpid(), "status": "ready", "api_url": "http://127.0.0.1:9/api"}))
    assert not local_server.owns(os.getpid(), paths)
    assert local_server.stop(tmp_path) == "stale"          # and this process is still here to see it


def test_a_lease_marks_the_server_in_use_until_released(tmp_path):
    paths = Paths.of(tmp_path)
    assert not (paths.home.exists() and local_server.in_use(paths))
    first, second = local_server.Lease(paths), local_server.Lease(paths)   # two commands at once
    assert local_server.in_use(paths)
    first.release()
    assert local_server.in_use(paths)
    second.release()
    assert not local_server.in_use(paths)


def test_a_killed_lease_holder_frees_the_server(tmp_path):
    """The kernel drops the lock of a process however it ends: a killed command keeps nothing in use."""
    paths = Paths.of(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom caseforge.runtime.local_server import "
                               "Lease, Paths\nLease(Paths.of(sys.argv[1]))\nprint('held', flush=True)\ntime.sleep(60)",
                               str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert local_server.in_use(paths)
        holder.kill()
        holder.wait()
        assert not local_server.in_use(paths)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_settings_from_the_environment(monkeypatch):
    monkeypatch.delenv(local_server.MODE_ENV, raising=False)
    monkeypatch.delenv(local_server.IDLE_ENV, raising=False)
    assert local_server.mode() == "local" and local_server.idle_timeout_s() == local_server.DEFAULT_IDLE_S
    monkeypatch.setenv(local_server.MODE_ENV, "Ephemeral")
    monkeypatch.setenv(local_server.IDLE_ENV, "30")
    assert local_server.mode() == "ephemeral" and local_server.idle_timeout_s() == 30
    monkeypatch.setenv(local_server.MODE_ENV, "remote")
    with pytest.raises(local_server.LocalServerError, match="local, ephemeral"):
        local_server.mode()
    monkeypatch.setenv(local_server.IDLE_ENV, "0")
    with pytest.raises(local_server.LocalServerError, match="above 0"):
        local_server.idle_timeout_s()


def test_the_suite_runs_on_temporary_servers():
    """tests/conftest.py opts the whole suite out of the local server (no test leaves one behind); the tests of
    the local server opt back in for their own PREFECT_HOME."""
    assert os.environ[local_server.MODE_ENV] == "ephemeral"


def test_with_the_users_api_url_nothing_changes(monkeypatch):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    monkeypatch.setenv(local_server.MODE_ENV, "local")
    monkeypatch.setattr(local_server, "ensure", lambda *a, **k: pytest.fail("no local server with a user's URL"))
    monkeypatch.setattr(prefect_api, "guard_ephemeral_server", lambda: pytest.fail("no temporary server either"))
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:4200/api"}):
        with prefect_api.prefect_api() as state:
            assert state is None and PREFECT_API_URL.value() == "http://127.0.0.1:4200/api"


def test_ephemeral_mode_starts_the_guarded_temporary_server(monkeypatch):
    calls = []
    monkeypatch.setenv(local_server.MODE_ENV, "ephemeral")
    monkeypatch.setattr(local_server, "ensure", lambda *a, **k: pytest.fail("ephemeral mode uses no local server"))
    monkeypatch.setattr(prefect_api, "guard_ephemeral_server", lambda: calls.append("guarded"))
    with prefect_api.prefect_api() as state:
        assert state is None
    assert calls == ["guarded"]


def test_a_local_server_that_cannot_be_used_falls_back_to_a_temporary_one(monkeypatch, tmp_path, caplog):
    calls = []

    def foreign(*args, **kwargs):
        raise local_server.LocalServerError("the local Prefect server (pid 1) has another prefect_version")

    monkeypatch.setenv(local_server.MODE_ENV, "local")
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.setattr(local_server, "ensure", foreign)
    monkeypatch.setattr(prefect_api, "guard_ephemeral_server", lambda: calls.append("guarded"))
    from prefect.settings import PREFECT_HOME, temporary_settings

    with temporary_settings({PREFECT_HOME: str(tmp_path)}):
        with prefect_api.prefect_api() as state:
            assert state is None
            assert not local_server.in_use(Paths.of(tmp_path))      # no lease kept on what is not used
    assert calls == ["guarded"]
    assert "another prefect_version" in caplog.text and "temporary server" in caplog.text


def test_while_a_command_uses_the_local_server_prefect_talks_to_it(monkeypatch, tmp_path):
    """PREFECT_API_URL points at the server inside the block (Prefect's global settings too, which its
    background threads read), a lease is held, and everything is as it was afterwards."""
    import prefect.context
    from prefect.settings import PREFECT_API_URL, PREFECT_HOME, get_current_settings, temporary_settings

    url = "http://127.0.0.1:9/api"
    monkeypatch.setenv(local_server.MODE_ENV, "local")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setattr(local_server, "ensure", lambda *a, **k: ({"pid": 1, "api_url": url}, "reused"))
    with temporary_settings({PREFECT_HOME: str(tmp_path)}):
        with prefect_api.prefect_api() as state:
            assert state["api_url"] == url
            assert os.environ["PREFECT_API_URL"] == url and os.environ[local_server.URL_ENV] == url
            assert prefect.context.GLOBAL_SETTINGS_CONTEXT.settings.api.url == url
            assert get_current_settings().flows.heartbeat_frequency is None   # nothing there watches them
            assert local_server.in_use(Paths.of(tmp_path))
        assert "PREFECT_API_URL" not in os.environ and local_server.URL_ENV not in os.environ
        assert not local_server.in_use(Paths.of(tmp_path))
        assert not PREFECT_API_URL.value()


def test_heartbeats_the_user_set_are_kept(monkeypatch, tmp_path):
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, PREFECT_HOME, get_current_settings, temporary_settings

    monkeypatch.setenv(local_server.MODE_ENV, "local")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setattr(local_server, "ensure", lambda *a, **k: ({"pid": 1, "api_url": "http://127.0.0.1:9/api"},
                                                                 "reused"))
    with temporary_settings({PREFECT_HOME: str(tmp_path), PREFECT_FLOWS_HEARTBEAT_FREQUENCY: 60}):
        with prefect_api.prefect_api():
            assert get_current_settings().flows.heartbeat_frequency == 60


def _pretend_server(paths: Paths) -> subprocess.Popen:
    """A process that local_server.owns() takes for this home's server (its marker and home in its command line)."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", local_server.MARKER,
                             str(paths.home.parent)])


def test_a_server_started_from_another_virtual_environment_is_not_shared(monkeypatch, tmp_path):
    """Two checkouts, each with its own .venv, under one ~/.prefect: the second does not silently use the server
    the first started, and says why (issue 36). Same for another caseforge version."""
    identity, version = prefect_api._identity()
    assert identity["venv"] == sys.prefix and identity["caseforge_version"] == local_server.caseforge_version()
    paths = Paths.of(tmp_path)
    paths.home.mkdir(parents=True)
    monkeypatch.setattr(local_server, "healthy", lambda *a, **k: True)       # it answers: only identity decides
    monkeypatch.setattr(local_server, "_launch", lambda *a, **k: pytest.fail("nothing is started over it"))
    server = _pretend_server(paths)
    try:
        for other, named in (({"venv": "/elsewhere/checkout/.venv"}, "virtual environment '/elsewhere/checkout/.venv'"),
                             ({"caseforge_version": "0.0.1"}, "caseforge version '0.0.1'")):
            paths.state.write_text(json.dumps({"pid": server.pid, "status": "ready", "api_url": "http://127.0.0.1:9/api",
                                               **identity, **other}))
            with pytest.raises(local_server.LocalServerError, match="not reused") as raised:
                local_server.ensure(tmp_path, identity, dict, 60, 5, version)
            assert named in str(raised.value) and f"this command: {identity[next(iter(other))]!r}" in str(raised.value)
            assert server.poll() is None                        # left alone
        paths.state.write_text(json.dumps({"pid": server.pid, "status": "ready", "api_url": "http://127.0.0.1:9/api",
                                           **identity}))
        assert local_server.ensure(tmp_path, identity, dict, 60, 5, version)[1] == "reused"
    finally:
        server.kill()
        server.wait()


def _flow_run_link() -> str | None:
    """The link Prefect's flow engine prints as "View at ..." when a flow run begins (None: it prints none)."""
    import uuid

    from prefect.client.schemas.objects import FlowRun
    from prefect.utilities.urls import url_for

    return url_for(FlowRun(id=uuid.UUID(int=7), flow_id=uuid.UUID(int=8), name="a-run"))


def test_no_view_at_link_to_the_local_server_which_serves_no_ui(monkeypatch, tmp_path):
    """Every flow run printed "View at http://127.0.0.1:PORT/runs/flow-run/..." while the local server serves
    no UI (a 404). A UI URL the user set is kept, and so are the links of the user's own server."""
    from prefect.settings import PREFECT_API_URL, PREFECT_HOME, PREFECT_UI_URL, temporary_settings

    monkeypatch.setenv(local_server.MODE_ENV, "local")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.delenv("PREFECT_UI_URL", raising=False)
    monkeypatch.setattr(local_server, "ensure", lambda *a, **k: ({"pid": 1, "api_url": "http://127.0.0.1:9/api"},
                                                                 "reused"))
    with temporary_settings({PREFECT_HOME: str(tmp_path)}):
        with prefect_api.prefect_api():
            assert _flow_run_link() is None
            assert os.environ["PREFECT_UI_URL"] == ""          # child processes too
        assert "PREFECT_UI_URL" not in os.environ
    with temporary_settings({PREFECT_HOME: str(tmp_path), PREFECT_UI_URL: "http://ui.example:4200"}):
        with prefect_api.prefect_api():
            assert _flow_run_link() == "http://ui.example:4200/runs/flow-run/00000000-0000-0000-0000-000000000007"
    with temporary_settings({PREFECT_API_URL: "http://prefect.example:4200/api"}):
        with prefect_api.prefect_api():
            assert _flow_run_link() == "http://prefect.example:4200/runs/flow-run/00000000-0000-0000-0000-000000000007"
