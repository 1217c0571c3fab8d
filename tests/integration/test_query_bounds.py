"""A query never starves a run (issue 26): ad-hoc queries (`caseforge sql`, `status`, `quality`) have a
statement timeout, a memory limit and a temp-spill limit a user can see and set; a reader that holds the
warehouse file while a run waits for it stops its own query and says so in one line; a writer that finds
the file held waits a bounded time, naming the process that holds it, then gives up in one line.

The runaway queries run in child processes with a deadline of their own, so a regression fails the test
instead of hanging the suite."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from caseforge.settings import load_settings
from caseforge.warehouse.connection import connect
from caseforge.warehouse.errors import WarehouseBusy
from caseforge.warehouse.mirror import export_curated_parquet
from caseforge.warehouse.query import open_for_query

RUNAWAY = "SELECT sum(hash(a.range * b.range)) FROM range(300000) a, range(300000) b"


@pytest.fixture
def warehouse(tmp_path):
    db = tmp_path / "cf.duckdb"
    con = connect(db)
    con.execute("INSERT INTO curated.scotus_legacy (case_id, name, raw_sha256) VALUES (1, 'A v. B', 'x')")
    export_curated_parquet(con, load_settings(db).parquet_dir)
    con.close()
    return db


def child_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CASEFORGE_QUERY_", "CASEFORGE_BUSY_"))}
    env.update(extra)
    return env


def caseforge_sql(db: Path, *args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "caseforge", "sql", RUNAWAY, "--db", str(db), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def lock_holders(db: Path) -> set[int]:
    """The pids holding a POSIX lock on the file (/proc/locks), without taking one ourselves."""
    inode = db.stat().st_ino
    holders = set()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[1] == "POSIX" and fields[5].rsplit(":", 1)[-1] == str(inode):
            holders.add(int(fields[4]))
    return holders


def wait_until_held(db: Path, pid: int, deadline_s: float = 60) -> None:
    deadline = time.monotonic() + deadline_s
    while pid not in lock_holders(db):
        assert time.monotonic() < deadline, f"process {pid} never opened {db}"
        time.sleep(0.05)


def stop(process: subprocess.Popen) -> tuple[str, str]:
    try:
        return process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"the query was still running after its bound; stderr: {err[-2000:]}")


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("caseforge: ") and "Traceback" not in err, err
    return lines[0]


def test_a_runaway_query_stops_at_its_timeout_with_one_line(warehouse):
    """(CASEFORGE_QUERY_TIMEOUT_S sets the same bound: test_the_query_bounds_are_visible_and_cannot_be_set_back.)"""
    started = time.monotonic()
    query = caseforge_sql(warehouse, "--timeout", "1", env=child_env())
    out, err = stop(query)
    assert query.returncode == 2 and out == ""
    line = one_line(err)
    assert "1 s" in line and "--timeout" in line and "CASEFORGE_QUERY_TIMEOUT_S" in line, line
    assert time.monotonic() - started < 25


def test_the_query_bounds_are_visible_and_cannot_be_set_back(warehouse, monkeypatch):
    monkeypatch.setenv("CASEFORGE_QUERY_MEMORY_LIMIT", "300MB")
    monkeypatch.setenv("CASEFORGE_QUERY_TEMP_LIMIT", "1GB")
    monkeypatch.setenv("CASEFORGE_QUERY_TIMEOUT_S", "45")
    settings = load_settings(warehouse)
    con, mode = open_for_query(settings.db_path, settings.parquet_dir)
    try:
        shown = con.execute("SELECT current_setting('memory_limit'), current_setting('max_temp_directory_size'), "
                            "current_setting('temp_directory')").fetchone()
        assert shown[:2] == ("286.1 MiB", "953.6 MiB"), shown
        assert shown[2] and not Path(shown[2]).is_relative_to(Path.cwd())     # never the user's current folder
        with pytest.raises(duckdb.Error):
            con.execute("SET memory_limit = '100GB'")
        assert con.timeout_s == 45
    finally:
        con.close()


def test_the_mirror_connection_has_the_same_bounds(warehouse, monkeypatch):
    from warehouse_holder import held_by_another_process

    monkeypatch.setenv("CASEFORGE_QUERY_MEMORY_LIMIT", "300MB")
    settings = load_settings(warehouse)
    with held_by_another_process(warehouse):
        con, mode = open_for_query(settings.db_path, settings.parquet_dir)
        try:
            assert mode == "parquet"
            assert con.execute("SELECT current_setting('memory_limit')").fetchone() == ("286.1 MiB",)
            started = time.monotonic()
            con.timeout_s = 1
            with pytest.raises(Exception) as caught:
                con.execute(RUNAWAY)
            assert "1 s" in str(caught.value) and time.monotonic() - started < 20
        finally:
            con.close()


def tiny_barexam(folder: Path) -> Path:
    folder.mkdir()
    (folder / "passages_tiny.jsonl").write_text('{"idx": "p1", "source": "mbe", "text": "Hearsay is ..."}\n'
                                                '{"idx": "p2", "source": "mbe", "text": "A contract is ..."}\n')
    return folder


def test_a_runaway_query_and_an_ingest_together_the_ingest_succeeds(warehouse, tmp_path, monkeypatch):
    """The must-show of issue 26: the query holds the file; the ingest announces that it waits, the query
    stops itself with one line, and the ingest runs."""
    from caseforge.tasks.barexam.ingest import refresh

    monkeypatch.setenv("CASEFORGE_BUSY_WAIT_S", "40")
    query = caseforge_sql(warehouse, env=child_env(CASEFORGE_QUERY_TIMEOUT_S="50"))
    try:
        wait_until_held(warehouse, query.pid)
        started = time.monotonic()
        report = refresh(load_settings(warehouse), str(tiny_barexam(tmp_path / "barexam")))
        waited = time.monotonic() - started
    finally:
        out, err = stop(query)
    assert report.ok and report.counts.get("barexam_passages_loaded") == 2, report
    assert query.returncode == 2
    line = one_line(err)
    assert "a run needs the warehouse" in line, line
    assert waited < 30, waited


def hold_in_plain_duckdb(db: Path) -> subprocess.Popen:
    """A writer that is not caseforge (it never yields): DuckDB itself holding the file."""
    code = ("import duckdb, sys; con = duckdb.connect(sys.argv[1]); print('ready', flush=True); "
            "sys.stdin.readline(); con.close(); print('released', flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", code, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout.readline().strip() == "ready"
    return holder


def test_a_second_writer_waits_a_bounded_time_and_names_the_holder(warehouse, monkeypatch, caplog):
    monkeypatch.setenv("CASEFORGE_BUSY_WAIT_S", "1.5")
    holder = hold_in_plain_duckdb(warehouse)
    try:
        started = time.monotonic()
        with pytest.raises(WarehouseBusy) as caught:
            connect(warehouse)
        waited = time.monotonic() - started
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    message = str(caught.value)
    assert "\n" not in message and f"PID {holder.pid}" in message and "1.5 s" in message, message
    assert "CASEFORGE_BUSY_WAIT_S" in message
    assert 1.5 <= waited < 15
    assert any(f"PID {holder.pid}" in r.getMessage() and "waiting" in r.getMessage() for r in caplog.records)


def test_a_writer_gets_the_warehouse_when_the_holder_lets_go_within_the_wait(warehouse, monkeypatch):
    monkeypatch.setenv("CASEFORGE_BUSY_WAIT_S", "30")
    holder = hold_in_plain_duckdb(warehouse)
    releaser = threading.Timer(1.0, lambda: (holder.stdin.write("go\n"), holder.stdin.flush()))
    releaser.start()
    try:
        started = time.monotonic()
        con = connect(warehouse)
        waited = time.monotonic() - started
        assert con.execute("SELECT name FROM curated.scotus_legacy").fetchall() == [("A v. B",)]
        con.close()
    finally:
        releaser.join()
        holder.stdin.close()
        holder.wait(timeout=60)
    assert 0.5 < waited < 20
    assert not list(warehouse.parent.glob("*waiting*"))       # the announcement is gone once it has the file
