"""ops.runs bookkeeping and the report every stage returns to the CLI and to Prefect."""
from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from caseforge.warehouse import run_sql


@dataclass
class StageReport:
    """What a stage did: counts for the UI and one-line reasons for everything that went wrong."""

    name: str
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    run_id: int | None = None
    results: dict = field(default_factory=dict)     # what the stage made: an eval run id, a release folder

    def add(self, counter: str, n: int = 1) -> None:
        self.counts[counter] = self.counts.get(counter, 0) + n

    def fail(self, reason: str) -> None:
        self.failures.append(reason)

    @property
    def ok(self) -> bool:
        return not self.failures and not self.counts.get("quarantined", 0)

    @property
    def status(self) -> str:
        if self.failures and not self.counts.get("quarantined"):
            return "failed"
        return "succeeded" if self.ok else "quarantined"

    def to_dict(self) -> dict:
        return asdict(self)


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _linux_process(pid: int) -> tuple[str, str] | None:
    """(state, '<boot id>/<start tick>') of a process from /proc; None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat[stat.rindex(")") + 2:].split()    # after "pid (comm) ": state is field 3, starttime field 22
    return fields[0], f"{_boot_id()}/{fields[19]}"


def process_identity(pid: int | None = None) -> tuple[int, str, str | None]:
    """(pid, host, process start) of this process (or `pid` on this host); the start tells a pid reused
    after a restart from the process that opened the run."""
    pid = os.getpid() if pid is None else pid
    linux = _linux_process(pid) if _boot_id() else None
    return pid, socket.gethostname(), linux[1] if linux else None


def owner_gone(pid: int | None, host: str | None, process_start: str | None) -> str | None:
    """Why the process that owns a run is certainly gone, or None (alive, or it cannot be checked from here)."""
    if pid is None or host != socket.gethostname():
        return None                                   # no owner recorded, or another machine's: unknown
    if process_start and _boot_id():
        linux = _linux_process(pid)
        if linux is None:
            return f"its process {pid} on {host} is gone"
        state, start = linux
        if start != process_start:
            return f"its process {pid} on {host} is gone (the pid now belongs to another process)"
        return f"its process {pid} on {host} is gone (a zombie)" if state == "Z" else None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"its process {pid} on {host} is gone"
    except PermissionError:
        return None
    return None


def interrupted_runs(rows) -> dict[int, str]:
    """run_id -> reason, for (run_id, pid, host, process_start) rows of running runs whose process is gone."""
    found = {}
    for run_id, pid, host, process_start in rows:
        reason = owner_gone(pid, host, process_start)
        if reason:
            found[run_id] = reason
    return found


def mark_interrupted_runs(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Every `running` run whose process is gone becomes `interrupted` (with why); returns their ids."""
    gone = interrupted_runs(run_sql(con, "ops/running_runs.sql").fetchall())
    noticed = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    marked = []
    for run_id, reason in sorted(gone.items()):
        try:
            run_sql(con, "ops/mark_run_interrupted.sql", [f"interrupted: {reason} (noticed {noticed})", run_id])
        except duckdb.TransactionException:
            continue        # another connection (a parallel source starting) marked it at the same moment
        marked.append(run_id)
    return marked


def start_run(con: duckdb.DuckDBPyConnection, kind: str, target: str) -> int:
    """Record a run owned by this process; first, runs left `running` by a process that is gone become
    `interrupted`."""
    mark_interrupted_runs(con)
    pid, host, process_start = process_identity()
    return run_sql(con, "ops/start_run.sql",
                   [kind, target, datetime.now(timezone.utc), pid, host, process_start]).fetchone()[0]


def finish_run(con: duckdb.DuckDBPyConnection, run_id: int, report: StageReport) -> None:
    message = "; ".join(report.failures[:20]) or None
    run_sql(con, "ops/finish_run.sql",
            [datetime.now(timezone.utc), report.status, json.dumps(report.counts), message, run_id])
