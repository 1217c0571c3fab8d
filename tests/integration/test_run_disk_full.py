"""A run that dies because the disk is full is recorded `failed` with the reason, though the write of its end
meets the same full disk. The warehouse lives on a small tmpfs mounted in a private mount namespace
(`unshare`), so nothing outside the test fills up; the run writes until DuckDB cannot checkpoint, which
invalidates the database for the rest of the process (the run's own connection can write nothing more)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

FILL_THE_DISK = r"""
import json, sys
from pathlib import Path
from caseforge.session import run_session
from caseforge.settings import load_settings
from caseforge.warehouse.connection import connect

db = Path(sys.argv[1]) / "cf.duckdb"
try:
    with run_session(load_settings(db), "ingest", "cn") as session:
        session.con.execute("CREATE TABLE filler (text VARCHAR)")
        for _ in range(400):                  # about 1 MB a commit, until the disk is full
            session.con.execute("INSERT INTO filler SELECT md5(random()::VARCHAR) || md5(random()::VARCHAR) "
                                "FROM range(16000)")
    print("the disk never filled", file=sys.stderr)
except Exception as exc:
    print(f"the run ended: {type(exc).__name__}: {exc}", file=sys.stderr)
con = connect(db)
print(json.dumps(con.execute("SELECT run_id, status, message FROM ops.runs ORDER BY run_id").fetchall()))
"""


def in_a_small_tmpfs(tmp_path, size_mb: int, code: str) -> subprocess.CompletedProcess:
    folder = tmp_path / "small-disk"
    folder.mkdir()
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no `unshare` here to mount a small tmpfs in a private namespace")
    probe = subprocess.run([unshare, "--user", "--map-root-user", "--mount", "mount", "-t", "tmpfs", "-o", "size=1m",
                            "tmpfs", str(folder)], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {probe.stderr.strip()}")
    script = 'mount -t tmpfs -o size="$1" tmpfs "$2" && exec "$3" -c "$4" "$2"'
    return subprocess.run([unshare, "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", f"{size_mb}m",
                           str(folder), sys.executable, code], capture_output=True, text=True, timeout=240)


def test_a_run_that_fills_the_disk_is_recorded_failed_with_the_reason(tmp_path):
    done = in_a_small_tmpfs(tmp_path, 24, FILL_THE_DISK)
    assert "the run ended: DiskFull: ingest cn: the disk is full (no space left on " in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    [[run_id, status, message]] = json.loads(done.stdout.splitlines()[-1])
    assert status == "failed", (status, message, done.stderr[-2000:])
    assert message.startswith("ingest cn: the disk is full (no space left on ") and "small-disk" in message, message


def test_an_end_the_warehouse_cannot_take_is_recorded_by_the_next_start_from_the_open_run_file(db_path, monkeypatch):
    """The retry on a fresh connection fails too (the disk stays full): the run's open-run file keeps its end,
    having given its reserved space back, and the next run's start writes it."""
    import duckdb

    from caseforge import run_record
    from caseforge.open_run_files import RESERVE_BYTES, open_runs_folder
    from caseforge.settings import load_settings
    from caseforge.session import run_session
    from caseforge.warehouse.connection import connect

    def disk_stays_full(*args, **kwargs):      # a test double for the warehouse's writes on a full disk
        raise duckdb.IOException('Could not write file "cf.duckdb.wal": No space left on device')

    writes = run_record.finish_run
    monkeypatch.setattr(run_record, "finish_run", disk_stays_full)
    with pytest.raises(OSError):
        with run_session(load_settings(db_path), "ingest", "cn") as session:
            session.report.add("records", 343)
            raise OSError(28, "No space left on device")
    open_file = open_runs_folder(db_path) / f"run-{session.run_id}.json"
    assert 0 < open_file.stat().st_size < RESERVE_BYTES
    monkeypatch.setattr(run_record, "finish_run", writes)

    con = connect(db_path)
    try:
        run_record.start_run(con, "ingest", "next")
        status, message, counts = con.execute("SELECT status, message, counts FROM ops.runs WHERE run_id = ?",
                                              [session.run_id]).fetchone()
    finally:
        con.close()
    assert status == "failed" and "ingest cn: the disk is full (no space left" in message, message
    assert "written by a later start" in message
    assert json.loads(counts) == {"records": 343}
    assert not open_file.exists()
