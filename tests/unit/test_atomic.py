"""caseforge/atomic.py: a new file replaces the old one whole, or, with keep_existing, never replaces one."""
from __future__ import annotations

import os
import tempfile

import psutil
import pytest

from caseforge.atomic import renamed_into_place, write_atomically
from caseforge.release.stored import StoredRelease, uploaded_when_done


def test_a_write_replaces_the_old_content_and_leaves_no_staging_file(tmp_path):
    target = tmp_path / "a.json"
    target.write_text("old")
    write_atomically(target, "new")
    assert target.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_failed_write_leaves_the_old_content_and_no_staging_file(tmp_path):
    target = tmp_path / "a.json"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with renamed_into_place(target) as partial:
            partial.write_text("half")
            raise RuntimeError("stopped")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_keep_existing_puts_a_new_file_in_place_but_never_over_one_made_meanwhile(tmp_path):
    target = tmp_path / "cf.duckdb"
    with renamed_into_place(target, keep_existing=True) as partial:
        partial.write_text("first")
    assert target.read_text() == "first"
    with renamed_into_place(target, keep_existing=True) as partial:
        partial.write_text("second")
    assert target.read_text() == "first" and [p.name for p in tmp_path.iterdir()] == ["cf.duckdb"]


def _a_pid_that_runs_nothing() -> int:
    pid = 4_000_000
    while psutil.pid_exists(pid):
        pid -= 1
    return pid


def test_a_killed_uploads_staging_folder_is_removed_by_the_next_upload(tmp_path, monkeypatch):
    """A store release is written into a temporary folder first (uploaded_when_done); a process killed meanwhile
    left that copy of the release in /tmp for ever (38 of them after a day of test runs here). The folder names
    its process, and the next upload removes those of processes that are gone, never one a live process uses."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    killed = tmp_path / f"caseforge-scotus-release-{_a_pid_that_runs_nothing()}-abc123"
    (killed / "scotus" / "data").mkdir(parents=True)
    running = tmp_path / f"caseforge-scotus-release-{os.getppid()}-def456"
    running.mkdir()
    other = tmp_path / "caseforge-scotus-release-notapid"
    other.mkdir()
    with pytest.raises(RuntimeError, match="stopped"):
        with uploaded_when_done(StoredRelease(store=None, dataset="scotus", current=None)) as staging:
            assert staging.parent.name.startswith(f"caseforge-scotus-release-{os.getpid()}-")
            raise RuntimeError("stopped before the upload")
    assert not killed.exists() and running.is_dir() and other.is_dir()
    assert not staging.parent.exists()
