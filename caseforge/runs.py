"""ops.runs bookkeeping, the report every stage returns to the CLI and to Prefect, and how a run is told to stop.

Every run ends in a true state (README, "Run states"): `succeeded` only when its work finished and nothing
failed, `quarantined` / `failed` when it finished with bad data / failures, `interrupted` (SIGINT, SIGTERM) or
`cancelled` (a Prefect cancellation) when it was stopped before it finished, `failed` with the reason when an
exception ended it. A run whose process vanished (SIGKILL, a crash of the interpreter, a reboot) stays
`running` until the next run's start (or `caseforge status`) finds its process gone and records `interrupted`.

The end of a run is written even when the disk is full: while a run is open it keeps a small file beside the
warehouse (`<db dir>/<db name>-runs/open/run-N.json`: who it is, padded with RESERVE_BYTES of space). When the
end cannot be written, the end goes into that file (which frees the padding), and the write is tried again on
a fresh connection; if that fails too, the next start records the run from the file.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import duckdb

from caseforge import processes
from caseforge.settings import load_settings
from caseforge.warehouse.connection import connect
from caseforge.warehouse.statements import database_file, run_sql, transaction

log = logging.getLogger(__name__)

RESERVE_BYTES = 256 * 1024          # room kept free for writing a run's end (one UPDATE is a few hundred bytes)
OPEN_RUNS_FOLDER = "open"
STOP_GRACE_S = 10.0                 # after a stop, how long the command gets to wind down before it just leaves


# --- being told to stop ---

@dataclass(frozen=True)
class StopRequest:
    """Why the runs of this process must stop: a signal, or Prefect cancelling the flow run."""

    state: str           # interrupted | cancelled
    cause: str           # "SIGINT (Ctrl-C)", "SIGTERM", "a Prefect cancellation (SIGTERM)"
    exit_code: int       # 128 + the signal

    @property
    def reason(self) -> str:
        return f"{self.state} by {self.cause}"


class RunStopped(KeyboardInterrupt):
    """Raised in a run's thread when the process was told to stop. A KeyboardInterrupt, so the `except Exception`
    that keeps one bad record from ending a batch lets it through, and Prefect treats it as an interruption."""

    def __init__(self, request: StopRequest):
        super().__init__(request)              # the request in args: it pickles (Prefect's result persistence)
        self.request = request

    def __str__(self) -> str:
        return self.request.reason


SIGNAL_CAUSES = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}

_stop: StopRequest | None = None
_stop_lock = threading.Lock()
_shield = threading.local()
_exit_when_stuck = False            # the command's own process (caseforge.cli.main): leave after STOP_GRACE_S


def request_stop(signum: int, cancelled: bool = False) -> StopRequest:
    """Record that every run of this process must stop; the first request is the one kept."""
    global _stop
    with _stop_lock:
        if _stop is None:
            cause = SIGNAL_CAUSES.get(signum, signal.Signals(signum).name)
            _stop = (StopRequest("cancelled", f"a Prefect cancellation ({cause})", 128 + signum) if cancelled
                     else StopRequest("interrupted", cause, 128 + signum))
            if _exit_when_stuck:
                threading.Thread(target=_leave_when_stuck, args=(_stop,), daemon=True, name="caseforge stop").start()
        return _stop


def stop_requested() -> StopRequest | None:
    return _stop


def check_stop() -> None:
    """Where long work can stop (every progress step, every gated batch): raises RunStopped once the process
    was told to stop. A signal's own exception can be lost (raised inside a finaliser, Python only prints it);
    this is what still stops the run then, and what stops work in other threads than the main one."""
    if _stop is not None:
        raise RunStopped(_stop)


def forget_stop() -> None:
    """A new command in the same process (tests, notebooks) starts without the last one's stop."""
    global _stop
    with _stop_lock:
        _stop = None
        _STOPPED.clear()
        _said.clear()


def stop_of(exc: BaseException) -> StopRequest | None:
    """The stop that `exc` carries out: RunStopped, Ctrl-C's KeyboardInterrupt, Prefect's TerminationSignal
    (recognised by its `signal`, so that this floor needs no Prefect), or any exception raised after the
    process was told to stop. None: an ordinary failure."""
    if isinstance(exc, RunStopped):
        return exc.request
    signum = getattr(exc, "signal", None)
    if isinstance(exc, KeyboardInterrupt) or (type(exc).__name__ == "TerminationSignal" and isinstance(signum, int)):
        return _stop or StopRequest("interrupted", SIGNAL_CAUSES.get(signum or signal.SIGINT, "SIGINT (Ctrl-C)"),
                                    128 + (signum or signal.SIGINT))
    return _stop


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """While a run's end is written: a signal is recorded but raises nothing, so the write is not cut short."""
    _shield.depth = getattr(_shield, "depth", 0) + 1
    try:
        yield
    finally:
        _shield.depth -= 1


def is_shielded() -> bool:
    return getattr(_shield, "depth", 0) > 0


def note_stop_signal(signum: int, cancelled: bool = False) -> StopRequest | None:
    """What a stop signal's handler does first: every run must stop (request_stop); a second signal while
    stopping ends the command at once. Returns the request when the handler should raise now, None while a
    run's end is being written (shielded)."""
    first = _stop is None
    request = request_stop(signum, cancelled)
    if not first and _exit_when_stuck:
        _leave(request)
    return None if is_shielded() else request


def on_stop_signal(signum: int, _frame=None) -> None:
    """The handler of SIGINT and SIGTERM: every run must stop; in the main thread, right now (RunStopped)."""
    request = note_stop_signal(signum)
    if request is not None:
        raise RunStopped(request)


@contextlib.contextmanager
def stop_on_signals(exit_when_stuck: bool = False) -> Iterator[None]:
    """SIGINT and SIGTERM stop the runs of this process (on_stop_signal), inside this block, in the main thread
    (elsewhere Python allows no handler: nothing changes). `exit_when_stuck` (a command's own process): once
    stopped, the process leaves after STOP_GRACE_S even if a thread is stuck (a read that never returns)."""
    global _exit_when_stuck
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    forget_stop()
    previous = {signum: signal.signal(signum, on_stop_signal) for signum in SIGNAL_CAUSES}
    _exit_when_stuck = exit_when_stuck
    try:
        yield
    finally:
        _exit_when_stuck = False
        for signum, handler in previous.items():
            signal.signal(signum, handler)


BEFORE_LEAVING: list = []           # callables(request) run before a stuck command leaves (Prefect's run states)


def _leave_when_stuck(request: StopRequest) -> None:
    threading.Event().wait(STOP_GRACE_S)
    stop_open_runs(request)            # the runs of threads that did not get to write their own end
    for hook in BEFORE_LEAVING:
        try:
            hook(request)
        except Exception as exc:       # noqa: BLE001  (leaving matters more)
            log.debug("before leaving: %s", exc)
    _leave(request, f"; work still running after {STOP_GRACE_S:.0f} s was abandoned")


_said = threading.Event()


def say_stopped(request: StopRequest, note: str = "") -> None:
    """The one line a stopped command prints (once, whoever gets there first: the command or the timer)."""
    import sys

    with _stop_lock:
        if _said.is_set():
            return
        _said.set()
    print(f"caseforge: {request.reason}{stopped_note()}{note}", file=sys.stderr, flush=True)


def _leave(request: StopRequest, note: str = "") -> None:
    import sys

    say_stopped(request, note)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    os._exit(request.exit_code)


# --- what a stage did ---

@dataclass
class StageReport:
    """What a stage did: counts for the UI and one-line reasons for everything that went wrong."""

    name: str
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    run_id: int | None = None
    results: dict = field(default_factory=dict)     # what the stage made: an eval run id, a release folder
    ended: str | None = None            # interrupted | cancelled | failed: the work did not finish

    def add(self, counter: str, n: int = 1) -> None:
        self.counts[counter] = self.counts.get(counter, 0) + n

    def fail(self, reason: str) -> None:
        self.failures.append(reason)

    def stopped(self, request: StopRequest) -> None:
        """The work was stopped before it finished."""
        self.ended = request.state
        self.failures.insert(0, f"{self.name}: {request.reason} before it finished")

    def crashed(self, reason: str) -> None:
        """An exception ended the work."""
        self.ended = "failed"
        self.failures.insert(0, reason)

    @property
    def ok(self) -> bool:
        return self.ended is None and not self.failures and not self.counts.get("quarantined", 0)

    @property
    def status(self) -> str:
        if self.ended:
            return self.ended
        if self.failures and not self.counts.get("quarantined"):
            return "failed"
        return "succeeded" if self.ok else "quarantined"

    def to_dict(self) -> dict:
        return asdict(self)


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


# --- a run's open file: who it is, room for its end, and its end when the warehouse could not take it ---

def open_runs_folder(db_path: Path) -> Path:
    return load_settings(db_path).runs_dir / OPEN_RUNS_FOLDER


def _open_file(db_path: Path | None, run_id: int) -> Path | None:
    return open_runs_folder(db_path) / f"run-{run_id}.json" if db_path else None


def _write_open_file(path: Path, record: dict) -> None:
    """The run's record, then spaces up to RESERVE_BYTES: disk space this run can give back when it must write
    its end on a full disk. Best effort (a full disk at the start leaves the run without one)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(record, default=str).encode()
        with path.open("wb") as out:
            out.write(text + b" " * max(0, RESERVE_BYTES - len(text)))
    except OSError as exc:
        log.debug("no open-run file for run %s: %s", record.get("run_id"), exc)


def _read_open_file(path: Path) -> dict | None:
    try:
        return json.loads(path.read_bytes().strip() or b"null")
    except (OSError, ValueError):
        return None


def unwritten_end(db_path: Path | None, run_id: int) -> dict | None:
    """The end a run could not write to the warehouse, kept in its open-run file (None: none kept)."""
    path = _open_file(db_path, run_id)
    record = _read_open_file(path) if path is not None and path.exists() else None
    return record.get("end") if isinstance(record, dict) else None


def _note_end_in_open_file(path: Path | None, end: dict) -> bool:
    """Writes the run's end over its open file, in place (no new disk space needed), and gives the padding back."""
    if path is None:
        return False
    record = _read_open_file(path) or {}
    text = json.dumps({**record, "end": end}, default=str).encode()
    try:
        with path.open("r+b") as out:
            out.write(text)
            out.truncate(len(text))
            out.flush()
            os.fsync(out.fileno())
        return True
    except OSError as exc:
        log.warning("could not keep the end of run %s in %s: %s", end.get("run_id"), path, exc)
        return False


def _forget_open_file(con_or_path, run_id: int) -> None:
    db_path = con_or_path if isinstance(con_or_path, Path) else database_file(con_or_path)
    path = _open_file(db_path, run_id)
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
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
        record = _read_open_file(path)
        run_id = record.get("run_id") if isinstance(record, dict) else None
        if not isinstance(run_id, int):
            with contextlib.suppress(OSError):            # unreadable: being written now, or left by a kill then
                if time.time() - path.stat().st_mtime > 60:
                    path.unlink()
            continue
        row = run_sql(con, "ops/run_status.sql", [run_id]).fetchone()
        gone = owner_gone(record.get("pid"), record.get("host"), record.get("process_start"))
        if row is not None and row[0] != "running":
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
                                                         record.get("process_start")]).fetchone()[0]
        run_sql(con, "ops/finish_run.sql", [end.get("finished_at") or _now(), end["status"],
                                            json.dumps(end.get("counts") or {}), message.strip(), run_id])
        for stage in end.get("stages") or []:
            run_sql(con, "ops/record_stage.sql", [run_id, *stage])


# --- opening and ending runs ---

_OPEN_RUNS: dict[tuple[Path | None, int], tuple[str, str]] = {}       # runs this process opened and has not ended


def start_run(con: duckdb.DuckDBPyConnection, kind: str, target: str) -> int:
    """Record a run owned by this process; first, runs left `running` by a process that is gone become
    `interrupted` (or what their open-run file says)."""
    mark_interrupted_runs(con)
    pid, host, process_start = process_identity()
    started_at = _now()
    run_id = run_sql(con, "ops/start_run.sql", [kind, target, started_at, pid, host, process_start]).fetchone()[0]
    db_path = database_file(con)
    path = _open_file(db_path, run_id)
    if path is not None:
        _write_open_file(path, {"run_id": run_id, "kind": kind, "target": target, "started_at": started_at.isoformat(),
                                "pid": pid, "host": host, "process_start": process_start})
    _OPEN_RUNS[(db_path, run_id)] = (kind, target)
    return run_id


def _end_of(report: StageReport) -> tuple[str, str, str | None]:
    return report.status, json.dumps(report.counts), "; ".join(report.failures[:20]) or None


def finish_run(con: duckdb.DuckDBPyConnection, run_id: int, report: StageReport,
               stages: list[list] | tuple = ()) -> None:
    """Write the run's end (and, for a nightly, its stage rows: record_stage.sql's parameters after run_id) in
    one transaction, then drop its open-run file."""
    status, counts, message = _end_of(report)
    with transaction(con):
        for stage in stages:
            run_sql(con, "ops/record_stage.sql", [run_id, *stage])
        run_sql(con, "ops/finish_run.sql", [_now(), status, counts, message, run_id])
    _forget_open_file(con, run_id)
    if report.ended in ("interrupted", "cancelled"):
        _STOPPED.append(run_id)


def end_run(con: duckdb.DuckDBPyConnection, run_id: int, report: StageReport,
            stages: list[list] | tuple = ()) -> duckdb.DuckDBPyConnection | None:
    """finish_run, made to stick: when the write fails (a full disk; DuckDB then may have invalidated the
    database for this process), the end goes into the run's open-run file, the connection is closed and the
    write is tried once more on a fresh one that does not checkpoint. Returns the connection to go on with (a
    new one after a retry), or None when the warehouse could not take the end (the next start records it from
    the file). A signal meanwhile waits until the end is written."""
    with shielded():
        try:
            finish_run(con, run_id, report, stages)
            return con
        except (duckdb.Error, OSError) as exc:
            first_failure = exc
        db_path = _database_file_of_run(con, run_id)
        _OPEN_RUNS.pop((db_path, run_id), None)
        status, counts, message = _end_of(report)
        noted = _note_end_in_open_file(_open_file(db_path, run_id), {
            "run_id": run_id, "status": status, "counts": report.counts, "message": message,
            "finished_at": _now().isoformat(), "stages": [list(s) for s in stages]})
        with contextlib.suppress(duckdb.Error):
            con.close()
        if db_path is None:
            return None
        try:
            retry = _reopen(db_path)
            try:
                finish_run(retry, run_id, report, stages)
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


_STOPPED: list[int] = []            # runs this process recorded as interrupted or cancelled


def stopped_note() -> str:
    """"; run 7 recorded as interrupted" for the line a stopped command prints."""
    if not _STOPPED or _stop is None:
        return ""
    ids = sorted(set(_STOPPED))
    return f"; run{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} recorded as {_stop.state}"


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
