"""Processes on this machine, through psutil: whether one is alive, who it is (its start, to tell a reused
pid apart), when this one started, and what command one runs. The one place caseforge asks the system about
a process."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

_IMPORTED_AT = time.time()
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True)
class Found:
    """A process that exists: `start` tells it from a later process given the same pid ('<boot id>/<start
    tick>'; None where the system has no boot id), `zombie` when it has ended but was not reaped yet."""

    pid: int
    start: str | None
    zombie: bool


def boot_id() -> str | None:
    try:
        return _BOOT_ID.read_text().strip()
    except OSError:
        return None


def _since_boot_s(process: psutil.Process) -> float:
    """When the process started, in seconds since boot, to the clock tick: psutil adds the boot time (whole
    seconds, from /proc/stat) to the start tick, so taking the boot time off again gives the tick back."""
    return process.create_time() - psutil.boot_time()


def find(pid: int) -> Found | None:
    """The process `pid`, or None when there is none."""
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            zombie = process.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
            since_boot = _since_boot_s(process)
    except psutil.NoSuchProcess:
        return None
    booted = boot_id()
    start = f"{booted}/{round(since_boot * os.sysconf('SC_CLK_TCK'))}" if booted else None
    return Found(pid, start, zombie)


def alive(pid: int) -> bool | None:
    """Whether `pid` runs (a zombie does not); None when the system will not say (another user's process where
    that is hidden)."""
    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return None


def identity(pid: int | None = None) -> str | None:
    """'<boot id>/<start tick>' of this process (or `pid`): with the pid, what a run records as its owner."""
    found = find(os.getpid() if pid is None else pid)
    return found.start if found else None


def started_at() -> float:
    """When this process started (epoch seconds): what is older was left by an earlier one.

    Its start tick since boot, plus when the machine booted to the sub-second (now less the time since boot,
    CLOCK_BOOTTIME): the boot time psutil and /proc/stat give is whole seconds, so a start computed from it
    could precede the real one by up to a second, and debris a process killed just before this one left would
    look like this process's own."""
    try:
        since_boot = _since_boot_s(psutil.Process())
        booted = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
        return min(_IMPORTED_AT, booted + since_boot)
    except (psutil.Error, OSError, AttributeError):
        return _IMPORTED_AT


def command_line(pid: int) -> list[str] | None:
    """The arguments `pid` was started with; None when there is no such process or they cannot be read."""
    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:
        return None
