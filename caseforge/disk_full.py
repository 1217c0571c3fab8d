"""A full disk, said in one line: which filesystem ran out (its mount point and what is left on it), what was being
written, and in which stage. Python (ENOSPC, EDQUOT, EFBIG under a file-size limit), DuckDB ("No space left on
device", also inside "the database has been invalidated ...") and pyarrow each say it their way: `disk_full_of`
reads them all. `DiskFull` carries the line: a stage that meets one stops the run at once (every later write would
fail the same way, and DuckDB may have invalidated the database for this process)."""
from __future__ import annotations

import errno
import os
import re
from pathlib import Path

_CODES = {errno.ENOSPC: "no space left", errno.EDQUOT: "disk quota exceeded", errno.EFBIG: "file size limit reached"}
_TEXTS = {"no space left on device": "no space left", "disk quota exceeded": "disk quota exceeded",
          "file too large": "file size limit reached"}
_QUOTED_PATH = re.compile(r"[\"'](/[^\"']+)[\"']")


class DiskFull(OSError):
    """A write met a full disk; str() is the one line that says so. `outcomes`: what finished beside it (the
    nightly's other sources), for the run's record."""

    def __init__(self, line: str, outcomes: list | None = None):
        super().__init__(errno.ENOSPC, line)
        self.line = line
        self.outcomes = outcomes or []

    def __str__(self) -> str:
        return self.line


_CARRIED = re.compile(r"([^\n]*?: the disk is full \([^\n]*)")


def disk_full_of(exc: BaseException) -> tuple[str, Path | None] | str | None:
    """(what ran out, the file being written when known) when `exc` (or what caused it) is a full disk; the line
    already said when it carries one (a DiskFull, or its text inside another error); else None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, DiskFull):
            return exc.line
        if (carried_line := _CARRIED.search(str(exc))) is not None:
            return re.sub(r"^(?:[A-Za-z]+(?:Error|Full|Crashed|Failed|Exception): )+", "", carried_line[1])
        if isinstance(exc, OSError) and exc.errno in _CODES:
            return _CODES[exc.errno], Path(exc.filename) if isinstance(exc.filename, str) else _path_in(str(exc))
        text = str(exc).lower()
        for marker, kind in _TEXTS.items():
            if marker in text:
                return kind, _path_in(str(exc))
        carried = getattr(exc, "error", None)            # caseforge.flows.states.FlowCrashed carries one
        exc = exc.__cause__ or exc.__context__ or (carried if isinstance(carried, BaseException) else None)
    return None


def _path_in(text: str) -> Path | None:
    found = _QUOTED_PATH.search(text)
    return Path(found[1]) if found else None


def filesystem_of(path: Path) -> tuple[Path, int] | None:
    """The mount point of the filesystem holding `path` (or its nearest existing folder) and the bytes free there
    for this user; None when nothing of the path exists."""
    folder = Path(os.path.abspath(path))
    while not folder.exists():
        if folder.parent == folder:
            return None
        folder = folder.parent
    device = folder.stat().st_dev
    mount = folder
    while mount.parent != mount and mount.parent.stat().st_dev == device:
        mount = mount.parent
    found = os.statvfs(folder)
    return mount, found.f_bavail * found.f_frsize


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"


# what caseforge keeps where, by the names settings give it (caseforge.settings): a path tells what was written
_KINDS = ((re.compile(r"-archive/"), "the archive"),
          (re.compile(r"\.duckdb(\.wal)?$|\.duckdb\.tmp/|\.duckdb\.[0-9a-f]{32}\.tmp(\.wal)?$"), "the warehouse"),
          (re.compile(r"-parquet(\.d)?/"), "the Parquet mirror"), (re.compile(r"-runs/"), "the run folder"),
          (re.compile(r"-releases/|release"), "a release"))


def _what(path: Path) -> str:
    text = str(path)
    return next((f"{kind} ({text})" for pattern, kind in _KINDS if pattern.search(text)), text)


def disk_full_line(exc: BaseException, stage: str, near: Path | None = None) -> str | None:
    """'<stage>: the disk is full (no space left on /mnt/data, 12.0 KiB free) writing the warehouse
    (/mnt/data/cf.duckdb.wal)', or None when `exc` is not a full disk. `near`: a path on the disk meant (the warehouse) when the error names none."""
    found = disk_full_of(exc)
    if found is None or isinstance(found, str):
        return found
    kind, path = found
    where = path or near
    filesystem = filesystem_of(where) if where is not None else None
    disk = f"{kind} on {filesystem[0]}, {_size(filesystem[1])} free" if filesystem else kind
    return f"{stage}: the disk is full ({disk})" + (f" writing {_what(path)}" if path else "")
