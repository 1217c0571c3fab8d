"""A run records the process that owns it; a `running` run whose process is gone (killed, crashed, the
machine restarted) becomes `interrupted` when the next run starts and in `caseforge status`, instead of
staying `running` in ops.runs forever. A run whose process lives stays `running`."""
from __future__ import annotations

import json
import socket
import subprocess
import sys

from caseforge.cli import main
from caseforge.run_record import start_run
from caseforge.warehouse.connection import connect

OPEN_A_RUN = ("import os, signal, sys; from caseforge.warehouse.connection import connect; from caseforge.run_record import start_run;"
              "con = connect(sys.argv[1]); run_id = start_run(con, 'ingest', 'doomed'); con.close();"
              "print(run_id, os.getpid(), flush=True);")


def run_then(db, ending: str) -> subprocess.Popen:
    """A process that opens a run and then ends as `ending` says, never finishing the run."""
    code = OPEN_A_RUN + {"killed": "os.kill(os.getpid(), signal.SIGKILL)",
                         "waits": "sys.stdin.read()"}[ending]
    return subprocess.Popen([sys.executable, "-c", code, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)


def row(db, run_id):
    con = connect(db)
    try:
        cursor = con.execute("SELECT * FROM ops.runs WHERE run_id = ?", [run_id])
        return dict(zip([d[0] for d in cursor.description], cursor.fetchone()))
    finally:
        con.close()


def test_a_run_records_the_process_that_owns_it(db_path):
    process = run_then(db_path, "killed")
    run_id, pid = map(int, process.stdout.readline().split())
    process.wait(timeout=60)
    owner = row(db_path, run_id)
    assert owner["pid"] == pid and owner["host"] == socket.gethostname()


def test_a_killed_runs_row_becomes_interrupted_when_the_next_run_starts(db_path):
    process = run_then(db_path, "killed")
    run_id, pid = map(int, process.stdout.readline().split())
    assert process.wait(timeout=60) != 0
    assert row(db_path, run_id)["status"] == "running"          # nothing noticed yet
    con = connect(db_path)
    start_run(con, "ingest", "next")
    con.close()
    interrupted = row(db_path, run_id)
    assert interrupted["status"] == "interrupted"
    assert str(pid) in interrupted["message"] and "gone" in interrupted["message"]


def test_status_shows_and_records_a_killed_run_as_interrupted(db_path, capsys):
    process = run_then(db_path, "killed")
    run_id, _ = map(int, process.stdout.readline().split())
    process.wait(timeout=60)
    assert main(["status", "--format", "json", "--db", str(db_path)]) == 0
    shown = {r["run_id"]: r["status"] for r in json.loads(capsys.readouterr().out)["runs"]}
    assert shown[run_id] == "interrupted"
    assert row(db_path, run_id)["status"] == "interrupted"


def test_a_run_whose_process_lives_stays_running_until_the_process_is_gone(db_path, capsys):
    process = run_then(db_path, "waits")
    run_id, _ = map(int, process.stdout.readline().split())
    try:
        con = connect(db_path)
        start_run(con, "ingest", "alongside")
        con.close()
        assert main(["status", "--format", "json", "--db", str(db_path)]) == 0
        shown = {r["run_id"]: r["status"] for r in json.loads(capsys.readouterr().out)["runs"]}
        assert shown[run_id] == "running" and row(db_path, run_id)["status"] == "running"
    finally:
        process.stdin.close()
        process.wait(timeout=60)
    # it exited without finishing its run: that run did not complete either
    assert main(["status", "--format", "json", "--db", str(db_path)]) == 0
    shown = {r["run_id"]: r["status"] for r in json.loads(capsys.readouterr().out)["runs"]}
    assert shown[run_id] == "interrupted"


def test_a_run_owned_on_another_host_is_left_alone(db_path):
    process = run_then(db_path, "killed")
    run_id, _ = map(int, process.stdout.readline().split())
    process.wait(timeout=60)
    con = connect(db_path)
    con.execute("UPDATE ops.runs SET host = 'another-machine' WHERE run_id = ?", [run_id])
    start_run(con, "ingest", "next")
    con.close()
    assert row(db_path, run_id)["status"] == "running"           # its process cannot be checked from here
