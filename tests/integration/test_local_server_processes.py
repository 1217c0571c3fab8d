"""The local Prefect server that commands share (caseforge.runtime.local_server), with real `caseforge`
processes, each test in its own PREFECT_HOME:

- two consecutive commands run their flows on one server (same pid, same API URL), which keeps both runs;
- a state file naming a process that is gone is replaced by a new server;
- two commands starting at once start one server;
- `caseforge server stop` stops it, and `status` says so;
- it stops itself after its idle timeout, but not while a command holds a lease.

Every test stops what it started (and checks it is gone): none outlives the suite.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from caseforge import processes
from caseforge.runtime import local_server

pytestmark = pytest.mark.slow
SAMPLE = "1789_1850.10us87.json"


def caseforge(*args, env, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "caseforge", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


class Home:
    """A PREFECT_HOME with the local server switched on; `close` stops whatever server it has."""

    def __init__(self, path: Path, idle_s: float = 120):
        self.path = path
        self.paths = local_server.Paths.of(path)
        self.env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", local_server.URL_ENV)}
        self.env.update(PREFECT_HOME=str(path), **{local_server.MODE_ENV: "local",
                                                    local_server.IDLE_ENV: str(idle_s)})
        self.pids: set[int] = set()

    def state(self) -> dict | None:
        state = local_server.read_state(self.paths)
        if state is not None:
            self.pids.add(state["pid"])
        return state

    def servers(self) -> list[int]:
        """Server processes of this home running now."""
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and local_server.owns(int(entry.name), self.paths):
                found.append(int(entry.name))
        self.pids.update(found)
        return found

    def close(self) -> None:
        caseforge("server", "stop", "--force", env=self.env, timeout=120)
        deadline = time.monotonic() + 30
        while self.servers() and time.monotonic() < deadline:
            time.sleep(0.2)
        left = self.servers()
        for pid in left:                                   # never leak what this test started
            os.kill(pid, signal.SIGKILL)
        assert not left, f"local servers left running: {left}"


@pytest.fixture
def home(tmp_path):
    home = Home(tmp_path / "prefect-home")
    try:
        yield home
    finally:
        home.close()


def _ok(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def test_two_consecutive_commands_reuse_one_server(home, samples_dir, tmp_path):
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / SAMPLE).write_bytes((samples_dir / "oyez" / "cases" / SAMPLE).read_bytes())
    seen = []
    for n in (1, 2):
        done = _ok(caseforge("ingest", "oyez", "--from-dir", str(folder), "--db", str(tmp_path / f"w{n}.duckdb"),
                             env=home.env))
        assert "passed_gate=1" in done.stdout
        assert "Starting temporary server" not in done.stderr, done.stderr[-2000:]
        assert "View at" not in done.stdout + done.stderr       # the local server serves no UI to link to
        state = home.state()
        assert state is not None and state["status"] == "ready"
        seen.append((state["pid"], state["api_url"]))
    assert seen[0] == seen[1], seen
    assert home.servers() == [seen[0][0]]
    runs = httpx.post(f"{seen[0][1]}/flow_runs/filter", json={}, timeout=30).json()
    assert [(r["state_type"], r["parameters"]["db"][-9:]) for r in runs] in (
        [("COMPLETED", "w1.duckdb"), ("COMPLETED", "w2.duckdb")],
        [("COMPLETED", "w2.duckdb"), ("COMPLETED", "w1.duckdb")]), runs      # both runs, on the one server
    status = _ok(caseforge("server", "status", "--format", "json", env=home.env))
    assert json.loads(status.stdout)["server"]["pid"] == seen[0][0]

    # `server stop` stops it (one server start per test: each costs Prefect's migrations)
    done = _ok(caseforge("server", "stop", env=home.env))
    assert done.stdout.strip() == "local Prefect server stopped"
    assert not processes.alive(seen[0][0])
    assert not home.paths.state.exists()
    status = caseforge("server", "status", env=home.env)
    assert status.returncode == 1 and "no local Prefect server running" in status.stdout


def test_a_stale_state_file_is_replaced_and_the_server_stops_when_idle(home):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    home.paths.home.mkdir(parents=True)
    home.paths.state.write_text(json.dumps({"pid": gone.pid, "status": "ready", "api_url": "http://127.0.0.1:9/api",
                                            "prefect_version": "3.8.8"}))
    done = _ok(caseforge("server", "start", "--idle-timeout", "4", env=home.env))
    assert "replaced stale" in done.stdout, done.stdout
    state = home.state()
    assert state["pid"] != gone.pid and state["status"] == "ready"
    assert httpx.get(f"{state['api_url']}/health", timeout=10).status_code == 200

    # the idle timeout stops it, but not while a command holds a lease
    pid = state["pid"]
    lease = local_server.Lease(home.paths)                 # a command using the server
    try:
        time.sleep(7)                                      # past the idle timeout
        assert processes.alive(pid), "stopped while in use"
        refused = caseforge("server", "stop", env=home.env)
        assert refused.returncode == 1 and "in use" in refused.stderr
    finally:
        lease.release()
    deadline = time.monotonic() + 60
    while processes.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes.alive(pid), "still running past its idle timeout"
    assert not home.paths.state.exists()


def test_two_commands_starting_at_once_start_one_server(home):
    starts = [subprocess.Popen([sys.executable, "-m", "caseforge", "server", "start"], env=home.env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [start.communicate(timeout=300) for start in starts]
    assert [start.returncode for start in starts] == [0, 0], outputs
    said = sorted(out.split(":")[0] for out, _ in outputs)
    assert said == ["local Prefect server already running", "local Prefect server started"], outputs
    assert len(home.servers()) == 1
