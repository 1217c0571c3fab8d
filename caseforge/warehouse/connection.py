"""Opening the warehouse file: a writable connection is migrated first; a file another process holds makes a
writer wait (saying who holds it, and asking a caseforge query that holds it to stop) and a reader give up; a
damaged or newer file is refused in one line."""
from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb

from caseforge import processes
from caseforge.atomic import clear_debris, renamed_into_place, write_atomically
from caseforge.settings import load_settings
from caseforge.warehouse.errors import WarehouseBusy, WarehouseCorrupt, WarehouseError
from caseforge.warehouse.migrations import migrate, refuse_unknown_migrations

log = logging.getLogger(__name__)

# Two threads opening the same file at once race in DuckDB's instance cache ("Unique file handle
# conflict"); parallel sources open their connections one at a time.
_CONNECT_LOCK = threading.Lock()


_LOCK_HELD = re.compile(r"Could not set lock on file|Conflicting lock is held")
_CORRUPT = re.compile(r"Corrupt database file|not a valid DuckDB database file")
_HOLDER_PID = re.compile(r"\(PID (\d+)\)")
IN_MEMORY = ":memory:"           # DuckDB's name for a database with no file (":memory:" or ":memory:NAME")
BUSY_POLL_S = 0.25              # how often a waiting writer tries the file again
BUSY_NOTE_EVERY_S = 30.0        # how often it says again that it is waiting, and for whom
WAITING_FRESH_S = 5.0           # a "writer waiting" file not rewritten for this long is left by a dead writer


def writer_waiting_path(db_path: str | Path) -> Path:
    """The file a writer that waits for the warehouse keeps fresh beside it (`<db>.writer-waiting`): a
    caseforge query holding the file sees it and stops, so the run gets the file."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.name + ".writer-waiting")


def _command_of(pid: int) -> str | None:
    """A process's command line, shortened to what a person typed (`caseforge sql ...`) when it is caseforge."""
    args = processes.command_line(pid)
    if args is None:
        return None
    for index, arg in enumerate(args):
        if Path(arg).name == "caseforge" or (arg == "caseforge" and index and args[index - 1] == "-m"):
            args = ["caseforge", *args[index + 1:]]
            break
    else:
        args = [Path(args[0]).name, *args[1:]] if args else []
    text = " ".join(args)
    return text if len(text) <= 80 else text[:77] + "..."


def holder_of(message: str) -> str:
    """Who holds the file, from DuckDB's lock error (it names the PID): 'PID 123 (caseforge sql ...)'."""
    found = _HOLDER_PID.search(message)
    if not found:
        return "another process"
    command = _command_of(int(found.group(1)))
    return f"PID {found.group(1)}" + (f" ({command})" if command else "")


def _open_problem(db_path: Path, exc: duckdb.IOException) -> WarehouseError | None:
    text = str(exc)
    if _LOCK_HELD.search(text):
        return WarehouseBusy(f"{db_path} is busy: held by {holder_of(text)}")
    if _CORRUPT.search(text):
        reason = " ".join(text.split("\n\n")[0].split())
        return WarehouseCorrupt(f"{db_path} is corrupt and cannot be opened ({reason}); restore it from a backup, "
                                "or move it aside and run the ingests again")
    return None


def writer_waiting(db_path: str | Path) -> dict | None:
    """The run waiting for the warehouse (pid, host, command), or None: no file, or a stale one."""
    path = writer_waiting_path(db_path)
    try:
        if time.time() - path.stat().st_mtime > WAITING_FRESH_S:
            return None
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _announce_waiting(db_path: Path) -> None:
    path = writer_waiting_path(db_path)
    mine = {"pid": os.getpid(), "host": socket.gethostname(), "command": _command_of(os.getpid())}
    try:
        write_atomically(path, json.dumps(mine))
    except OSError:
        pass                                 # a read-only folder: the wait is still bounded


def _withdraw_waiting(db_path: Path) -> None:
    path = writer_waiting_path(db_path)
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def connect(db_path: str | Path, read_only: bool = False, config: dict | None = None,
            busy_wait_s: float | None = None) -> duckdb.DuckDBPyConnection:
    """Open the warehouse; a writable connection is migrated to the latest schema first.

    `config`: DuckDB settings applied as the database opens (open_for_query's sandbox). A file another
    process holds: a writer waits up to `busy_wait_s` (default Settings.busy_wait_s, CASEFORGE_BUSY_WAIT_S),
    saying who holds it and keeping `<db>.writer-waiting` fresh so that a caseforge query holding it stops,
    then gives up with WarehouseBusy; a reader does not wait unless told. A damaged file is WarehouseCorrupt,
    a warehouse migrated by a newer caseforge WarehouseTooNew, for readers and writers alike."""
    db_path = Path(db_path)
    if read_only and not db_path.exists():
        raise FileNotFoundError(f"no warehouse at {db_path}; run an ingest first or pass --db")
    if not read_only:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        if not str(db_path).startswith(IN_MEMORY) and (not db_path.exists() or db_path.stat().st_size == 0):
            with _CONNECT_LOCK:
                _create(db_path)
    if busy_wait_s is None:
        busy_wait_s = 0.0 if read_only else load_settings().busy_wait_s
    deadline = time.monotonic() + busy_wait_s
    waiting, next_note = False, 0.0
    try:
        while True:
            with _CONNECT_LOCK:
                try:
                    con = duckdb.connect(str(db_path), read_only=read_only, config=config or {})
                except duckdb.IOException as exc:
                    problem = _open_problem(db_path, exc)
                    if problem is None:
                        raise
                    if not isinstance(problem, WarehouseBusy) or time.monotonic() >= deadline:
                        if isinstance(problem, WarehouseBusy) and busy_wait_s > 0:
                            problem = WarehouseBusy(f"{problem}; gave up after waiting {busy_wait_s:g} s "
                                                    "(CASEFORGE_BUSY_WAIT_S sets how long)")
                        raise problem from exc
                else:
                    try:
                        refuse_unknown_migrations(con, db_path)
                        if not read_only:
                            migrate(con)
                    except BaseException:
                        con.close()
                        raise
                    return con
            if not waiting or time.monotonic() >= next_note:
                waited = busy_wait_s - (deadline - time.monotonic())
                log.warning("%s; waiting up to %g s for it (CASEFORGE_BUSY_WAIT_S)%s", problem, busy_wait_s,
                            f", {waited:.0f} s so far" if waiting else "")
                waiting, next_note = True, time.monotonic() + BUSY_NOTE_EVERY_S
            if not read_only:
                _announce_waiting(db_path)
            time.sleep(max(0.0, min(BUSY_POLL_S, deadline - time.monotonic())))
    finally:
        if waiting and not read_only:
            _withdraw_waiting(db_path)


def _create(db_path: Path) -> None:
    """A new warehouse appears whole or not at all. DuckDB, when the disk fills (or the process dies) as it makes a
    database, leaves an empty or part-written file that no later open accepts; so the file is made and migrated under
    a temporary name beside `db_path` and put in place when it is complete; what a killed creation left there is
    removed first. An empty file at `db_path` (left so by an older caseforge) holds nothing and is replaced."""
    clear_debris(db_path)
    if db_path.exists() and db_path.stat().st_size == 0:
        db_path.unlink()
    with renamed_into_place(db_path, keep_existing=True) as partial:
        try:
            con = duckdb.connect(str(partial))
            try:
                migrate(con)
            finally:
                con.close()
        except BaseException:
            Path(f"{partial}.wal").unlink(missing_ok=True)
            raise


@contextmanager
def open_warehouse(db_path: str | Path, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(db_path, read_only=read_only)
    try:
        yield con
    finally:
        con.close()

