"""ops.runs: every run's row, from its start to its true end (docs/nightly.md, "Run states"): `succeeded` only when its
work finished and nothing failed, `quarantined` / `failed` when it finished with bad data / failures,
`interrupted` (SIGINT, SIGTERM) or `cancelled` (a Prefect cancellation) when it was stopped before it finished,
`failed` with the reason when an exception ended it. A run whose process vanished (SIGKILL, a crash, a reboot)
stays `running` until the next run's start (or `caseforge status`) finds its process gone and records
`interrupted`; an end the warehouse could not take (a full disk) is recorded from the run's open-run file
(caseforge.open_run_files)."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
from contextvars import ContextVar
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from caseforge import processes
from caseforge.open_run_files import (note_end_in_open_file, open_file, open_runs_folder, read_open_file,
                                      remove_open_file, write_open_file)
from caseforge.stage_report import StageReport
from caseforge.stopping import StopRequest, recorded_as_stopped, shielded
from caseforge.warehouse.connection import connect
from caseforge.warehouse.statements import database_file, run_sql, transaction

log = logging.getLogger(__name__)


# --- who owns a run ---

def process_identity(pid: int | None = None) -> tuple[int, str, str | None]:
    """(pid, host, process start) of this process (or `pid` on this host); the start tells a pid reused
    after a restart from the process that opened the run."""
    pid = os.getpid() if pid is None else pid
    return pid, socket.gethostname(), processes.identity(pid)


def owner_gone(pid: int | None, host: str | None, process_start: str | None) -> str | None:
    """Why the process that owns a run is certainly gone, or None (alive, or it cannot be checked from here)."""
    if pid is None or host != socket.gethostname():
        return None                                   # no owner recorded, or another machine's: unknown
    if process_start and processes.boot_id():
        found = processes.find(pid)
        if found is None:
            return f"its process {pid} on {host} is gone"
        if found.start != process_start:
            return f"its process {pid} on {host} is gone (the pid now belongs to another process)"
        return f"its process {pid} on {host} is gone (a zombie)" if found.zombie else None
    if processes.find(pid) is None:
        return f"its process {pid} on {host} is gone"
    return None


def interrupted_runs(rows) -> dict[int, str]:
    """run_id -> reason, for (run_id, pid, host, process_start) rows of running runs whose process is gone."""
    found = {}
    for run_id, pid, host, process_start in rows:
        reason = owner_gone(pid, host, process_start)
        if reason:
            found[run_id] = reason
    return found


def _now() -> datetime:
    return datetime.now(timezone.utc)


def mark_interrupted_runs(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Runs that ended without writing their end are written now: from their open-run file when it holds the
    end (a full disk), else `interrupted` (with why) when their process is gone; returns the runs marked."""
    marked = settle_open_runs(con)
    gone = interrupted_runs(run_sql(con, "ops/running_runs.sql").fetchall())
    noticed = _now().strftime("%Y-%m-%d %H:%M:%S UTC")
    for run_id, reason in sorted(gone.items()):
        try:
            run_sql(con, "ops/mark_run_interrupted.sql", [f"interrupted: {reason} (noticed {noticed})", run_id])
        except duckdb.TransactionException:
            continue        # another connection (a parallel source starting) marked it at the same moment
        _forget_open_file(con, run_id)
        marked.append(run_id)
    return marked


def _forget_open_file(con_or_path, run_id: int) -> None:
    db_path = con_or_path if isinstance(con_or_path, Path) else database_file(con_or_path)
    remove_open_file(db_path, run_id)
    _OPEN_RUNS.pop((db_path, run_id), None)


def settle_open_runs(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Open-run files left behind: the end one holds is recorded (the run's row inserted if the warehouse lost
    it); a file of a run that ended, or whose process is gone without an end, is removed (a gone process's run
    is then marked by mark_interrupted_runs). A live run's file stays."""
    db_path = database_file(con)
    folder = open_runs_folder(db_path) if db_path else None
    if folder is None or not folder.is_dir():
        return []
    recorded = []
    for path in sorted(folder.glob("run-*.json")):
        record = read_open_file(path)
        run_id = record.get("run_id") if isinstance(record, dict) else None
        if not isinstance(run_id, int):
            with contextlib.suppress(OSError):            # unreadable: being written now, or left by a kill then
                if time.time() - path.stat().st_mtime > 60:
                    path.unlink()
            continue
        row = run_sql(con, "ops/run_status.sql", [run_id]).fetchone()
        gone = owner_gone(record.get("pid"), record.get("host"), record.get("process_start"))
        # an end written, then amended when the warehouse could not take the amendment (a mirror the disk had no
        # room for, caseforge.session.end_and_mirror): the file's end is the later one
        amended = row is not None and "end" in record and \
            (record["end"].get("status"), record["end"].get("message")) != tuple(row)
        if row is not None and row[0] != "running" and not amended:
            path.unlink(missing_ok=True)               # it ended; the file was left by a kill right after
        elif "end" in record or (gone and row is None):     # no row: the warehouse lost its start too
            end = record.get("end") or {"status": "interrupted", "message": f"interrupted: {gone}"}
            try:
                _record_end_from_file(con, {**record, "end": end}, row is not None)
            except duckdb.TransactionException:
                continue            # another connection (a parallel source starting) recorded it at the same moment
            path.unlink(missing_ok=True)
            recorded.append(run_id)
        elif gone:
            path.unlink(missing_ok=True)               # mark_interrupted_runs marks its row
    return recorded


def _record_end_from_file(con, record: dict, has_row: bool) -> None:
    end = record["end"]
    note = " (written by a later start: the run could not write its end"
    message = (end.get("message") or "") + note + (")" if has_row else "; its start was lost too)")
    with transaction(con):
        if has_row:
            run_id = record["run_id"]
        else:
            run_id = run_sql(con, "ops/start_run.sql", [record["kind"], record["target"], record["started_at"],
                                                         record.get("pid"), record.get("host"),
                                                         record.get("process_start"),
                                                         record.get("parent_run_id")]).fetchone()[0]
        run_sql(con, "ops/finish_run.sql", [end.get("finished_at") or _now(), end["status"],
                                            json.dumps(end.get("counts") or {}), message.strip(), run_id])
        for stage in end.get("stages") or []:
            run_sql(con, "ops/record_stage.sql", [run_id, *stage])


# --- opening and ending runs ---

# The run whose work this context does (set by caseforge.session.run_session and the nightly): the LLM calls it
# asks are recorded with it (ops.llm_calls.run_id), and a run started inside it records it as its parent. Context
# variables travel into the nightly's source threads and Prefect task runs.
_CURRENT_RUN: ContextVar[int | None] = ContextVar("caseforge_current_run", default=None)


def current_run() -> int | None:
    return _CURRENT_RUN.get()


def begin_work(run_id: int):
    """The work from here on (in this context) is run `run_id`'s (see current_run); returns the token for
    `end_work`."""
    return _CURRENT_RUN.set(run_id)


def end_work(token) -> None:
    _CURRENT_RUN.reset(token)


@contextlib.contextmanager
def working_in(run_id: int):
    """The work inside is run `run_id`'s (see current_run)."""
    token = begin_work(run_id)
    try:
        yield
    finally:
        end_work(token)

_OPEN_RUNS: dict[tuple[Path | None, int], tuple[str, str]] = {}       # runs this process opened and has not ended
_WHEN_STARTED: list = []        # hook(kind, target, run_id) after a run is recorded (the flows layer names its flow run)


def also_when_started(hook) -> None:
    """Call `hook(kind, target, run_id)` whenever this process records a run's start (once per hook)."""
    if hook not in _WHEN_STARTED:
        _WHEN_STARTED.append(hook)


def start_run(con: duckdb.DuckDBPyConnection, kind: str, target: str) -> int:
    """Record a run owned by this process; first, runs left `running` by a process that is gone become
    `interrupted` (or what their open-run file says)."""
    mark_interrupted_runs(con)
    pid, host, process_start = process_identity()
    started_at = _now()
    parent = current_run()
    run_id = run_sql(con, "ops/start_run.sql", [kind, target, started_at, pid, host, process_start,
                                                parent]).fetchone()[0]
    db_path = database_file(con)
    path = open_file(db_path, run_id)
    if path is not None:
        write_open_file(path, {"run_id": run_id, "kind": kind, "target": target, "started_at": started_at.isoformat(),
                                "pid": pid, "host": host, "process_start": process_start, "parent_run_id": parent})
    _OPEN_RUNS[(db_path, run_id)] = (kind, target)
    for hook in list(_WHEN_STARTED):
        try:
            hook(kind, target, run_id)
        except Exception as exc:              # noqa: BLE001  (a name for the run is never worth failing it)
            log.warning("run %s: %s", run_id, exc)
    return run_id


def _end_of(report: StageReport) -> tuple[str, str, str | None]:
    return report.status, json.dumps(report.counts), "; ".join(report.failures[:20]) or None


def finish_run(con: duckdb.DuckDBPyConnection, run_id: int, report: StageReport,
               stages: list[list] | tuple = (), keep_open_file: bool = False) -> None:
    """Write the run's end (and, for a nightly, its stage rows: record_stage.sql's parameters after run_id) in
    one transaction, then drop its open-run file (`keep_open_file`: not yet; the end may still be amended, see
    caseforge.session.end_and_mirror, and close_open_file drops it)."""
    status, counts, message = _end_of(report)
    with transaction(con):
        for stage in stages:
            run_sql(con, "ops/record_stage.sql", [run_id, *stage])
        run_sql(con, "ops/finish_run.sql", [_now(), status, counts, message, run_id])
    if not keep_open_file:
        _forget_open_file(con, run_id)
    if report.ended in ("interrupted", "cancelled"):
        recorded_as_stopped(run_id)


def close_open_file(con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    """The run's end is written for good: its open-run file goes."""
    _forget_open_file(con, run_id)


def end_run(con: duckdb.DuckDBPyConnection, run_id: int, report: StageReport,
            stages: list[list] | tuple = (), keep_open_file: bool = False) -> duckdb.DuckDBPyConnection | None:
    """finish_run, made to stick: when the write fails (a full disk; DuckDB then may have invalidated the
    database for this process), the end goes into the run's open-run file, the connection is closed and the
    write is tried once more on a fresh one that does not checkpoint. Returns the connection to go on with (a
    new one after a retry), or None when the warehouse could not take the end (the next start records it from
    the file). A signal meanwhile waits until the end is written."""
    with shielded():
        try:
            finish_run(con, run_id, report, stages, keep_open_file)
            return con
        except (duckdb.Error, OSError) as exc:
            first_failure = exc
        db_path = _database_file_of_run(con, run_id)
        _OPEN_RUNS.pop((db_path, run_id), None)
        status, counts, message = _end_of(report)
        noted = note_end_in_open_file(open_file(db_path, run_id), {
            "run_id": run_id, "status": status, "counts": report.counts, "message": message,
            "finished_at": _now().isoformat(), "stages": [list(s) for s in stages]})
        with contextlib.suppress(duckdb.Error):
            con.close()
        if db_path is None:
            return None
        try:
            retry = _reopen(db_path)
            try:
                finish_run(retry, run_id, report, stages, keep_open_file)
            except BaseException:
                with contextlib.suppress(duckdb.Error):
                    retry.close()
                raise
        except Exception as exc:               # noqa: BLE001  (the file keeps the end; nothing may mask the run's own end)
            log.warning("run %s: its end could not be written (%s; again: %s)%s", run_id, first_failure, exc,
                        "; the next start records it from its open-run file" if noted else "")
            return None
        return retry


def _reopen(db_path: Path) -> duckdb.DuckDBPyConnection:
    """A connection for writing a run's end after a failed write: a fresh database instance (one DuckDB
    invalidated cannot be used again) that does not checkpoint (a checkpoint on a full disk fails after the
    commit); where other connections of this process keep the instance open, one of them."""
    try:
        return connect(db_path, config={"wal_autocheckpoint": "1TB"})
    except duckdb.ConnectionException:         # opened elsewhere in this process with other settings
        return connect(db_path)


def _database_file_of_run(con, run_id: int) -> Path | None:
    try:
        return database_file(con)
    except duckdb.Error:                     # an invalidated database answers nothing: the run knows its file
        paths = {db_path for (db_path, open_id) in list(_OPEN_RUNS) if open_id == run_id and db_path is not None}
        return paths.pop() if len(paths) == 1 else None


def stop_open_runs(request: StopRequest) -> list[int]:
    """Every run this process opened and has not ended (work in a thread that the stop has not reached yet)
    recorded as stopped now, on a connection of its own; its thread may still write its own end later."""
    marked = []
    for (db_path, run_id), (kind, target) in sorted(list(_OPEN_RUNS.items()), key=lambda item: item[0][1]):
        if db_path is None:
            continue
        report = StageReport(f"{kind} {target}", run_id=run_id)
        report.stopped(request)
        try:
            con = connect(db_path)
        except Exception as exc:            # noqa: BLE001  (the next start marks it: its process will be gone)
            log.debug("run %s not marked stopped: %s", run_id, exc)
            continue
        try:
            with shielded():
                finish_run(con, run_id, report)
            marked.append(run_id)
        except (duckdb.Error, OSError) as exc:
            log.debug("run %s not marked stopped: %s", run_id, exc)
        finally:
            con.close()
    return marked
