"""`make test` on a disk too small for the suite stops at once with one line (tests/disk_room.py), instead of
failing hundreds of tests at random once the disk fills: a real pytest session of this project, its temporary
folder on a 64 MB tmpfs (a private user and mount namespace, tests/small_disks.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from small_disks import in_small_disks, namespaces_refused

pytestmark = pytest.mark.timeout(300)
PROJECT_ROOT = Path(__file__).resolve().parents[2]
A_SMALL_TEST_FILE = "tests/unit/test_docs_llm_key.py"


def run_suite_on_small_disk(tmp_path: Path, *options: str):
    refused = namespaces_refused(tmp_path / "probe")
    if refused:
        pytest.skip(refused)
    disk = tmp_path / "disk"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "--basetemp", str(disk / "basetemp"),
            *options, A_SMALL_TEST_FILE]
    return in_small_disks([(disk, "64m")], argv, timeout=240), disk


def test_a_disk_too_small_for_the_suite_stops_it_at_once_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    done, disk = run_suite_on_small_disk(tmp_path, "--require-free-disk", "4")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-3000:]
    # stderr: the one line (pytest repeats it in its stdout banner, "! _pytest.outcomes.Exit: ... !")
    assert done.stderr.strip().count("\n") == 0 and "not enough disk for the test suite" in done.stderr, output[-3000:]
    assert f"GB free at {disk}," in done.stderr and "need about 4 GB" in done.stderr, done.stderr
    assert " passed" not in output and " failed" not in output, output[-3000:]    # no test ran


def test_a_disk_with_room_runs_the_tests(tmp_path, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    done, _ = run_suite_on_small_disk(tmp_path, "--require-free-disk", "0.01")
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert " passed" in done.stdout and "not enough disk" not in done.stdout + done.stderr, done.stdout[-3000:]
