"""The command line around Prefect's temporary local server, as a user runs it (a real `caseforge` process):

- a flow that crashes prints Prefect's one-line log records and the command's one-line reason, not tens of
  lines of traceback; `--debug` prints the traceback, and Prefect's run log (what the UI shows) keeps it
  either way;
- `run nightly --from-samples` with a samples folder that does not exist fails and names the folder;
- a killed `caseforge` leaves no temporary Prefect server (about 200 MB each) behind.
"""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def cli_env(home: Path, **extra) -> dict:
    """Ephemeral Prefect (no API URL) with its own home, so its run log can be read afterwards."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(home), **extra)
    return env


def caseforge(*args, env, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "caseforge", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="module")
def nightly_without_samples(tmp_path_factory):
    """`caseforge run nightly --from-samples` with CASEFORGE_SAMPLES naming a folder that is not there,
    once plainly and once with --debug."""
    root = tmp_path_factory.mktemp("nosamples")
    missing = root / "samples-not-here"

    def run(mode: str, extra: list[str]):
        home = root / f"prefect-{mode}"
        done = caseforge(*extra, "run", "nightly", "--from-samples", "--db", str(root / f"{mode}.duckdb"),
                         env=cli_env(home, CASEFORGE_SAMPLES=str(missing)))
        return done, home

    with ThreadPoolExecutor(max_workers=2) as pool:     # independent commands, mostly waiting on their servers
        futures = {mode: pool.submit(run, mode, extra) for mode, extra in (("plain", []), ("debug", ["--debug"]))}
        runs = {mode: future.result() for mode, future in futures.items()}
    return missing, runs


def test_missing_samples_folder_fails_and_names_it(nightly_without_samples):
    missing, runs = nightly_without_samples
    done, _ = runs["plain"]
    assert done.returncode != 0
    reasons = [line for line in done.stderr.splitlines() if line.startswith("caseforge: ")]
    assert len(reasons) == 1 and str(missing) in reasons[0], done.stderr[-3000:]
    # a missing folder is an ordinary error (exit 2), not the program crashing, and it is said once
    assert done.returncode == 2 and "crashed" not in reasons[0] and "FileNotFoundError" not in reasons[0], reasons
    assert done.stderr.count(str(missing)) == 1, done.stderr[-3000:]


def test_a_crashed_flow_prints_no_traceback_without_debug(nightly_without_samples):
    missing, runs = nightly_without_samples
    done, _ = runs["plain"]
    assert "Traceback" not in done.stderr and 'File "' not in done.stderr, done.stderr[-3000:]
    assert len(done.stderr.splitlines()) <= 12, done.stderr      # Prefect's one-line records and ours


def test_debug_prints_the_traceback(nightly_without_samples):
    missing, runs = nightly_without_samples
    done, _ = runs["debug"]
    assert done.returncode != 0
    assert "Traceback (most recent call last)" in done.stderr and "nightly.py" in done.stderr
    assert str(missing) in done.stderr


def test_prefects_run_log_keeps_the_traceback(nightly_without_samples):
    """What the Prefect UI shows of the run: the log records stored by its API, traceback included."""
    _, runs = nightly_without_samples
    _, home = runs["plain"]
    with sqlite3.connect(home / "prefect.db") as db:
        messages = [m for (m,) in db.execute("SELECT message FROM log")]
    assert any("Traceback (most recent call last)" in m and "FileNotFoundError" in m for m in messages), messages


# --- a killed command leaves no server behind ---

DRIVER = """
import sys, time
from pathlib import Path
import caseforge.flows.nightly as nightly

def slow_nightly(settings, options=None, **kwargs):      # stands in for a long night
    Path(sys.argv[2]).write_text("running")
    time.sleep(600)

nightly.run_nightly = slow_nightly
from caseforge.cli import main
sys.exit(main(["run", "nightly", "--db", sys.argv[1]]))
"""


def _children() -> dict[int, int]:
    """pid -> parent pid of every process visible here."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            found[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    return found


def _descendants(pid: int) -> set[int]:
    parents = _children()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its new parent to reap it holds no memory: not alive)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
def test_a_killed_command_leaves_no_prefect_server_behind(tmp_path):
    marker = tmp_path / "flow-running"
    cli = subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path / "cf.duckdb"), str(marker)],
                           env=cli_env(tmp_path / "prefect-home"), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    left: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 240
        while not marker.exists():
            assert cli.poll() is None, "the command ended before its flow ran"
            assert time.monotonic() < deadline, "the flow did not start"
            time.sleep(0.2)
        left = {pid: _cmdline(pid) for pid in _descendants(cli.pid)}
        servers = [pid for pid, cmdline in left.items() if "prefect.server.api.server:create_app" in cmdline]
        assert servers, f"no temporary Prefect server among {list(left.values())}"

        cli.send_signal(signal.SIGKILL)                 # no atexit, no finally: the way a run gets killed
        cli.wait(timeout=30)
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in left) and time.monotonic() < deadline:
            time.sleep(0.2)
        survivors = {pid: cmdline for pid, cmdline in left.items() if _alive(pid) and _cmdline(pid) == cmdline}
        assert not survivors, f"left behind after the command was killed: {survivors}"
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        for pid, cmdline in left.items():               # never leak what this test started (and only that)
            if _alive(pid) and _cmdline(pid) == cmdline:
                os.kill(pid, signal.SIGKILL)
