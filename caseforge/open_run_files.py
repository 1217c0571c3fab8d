"""The file each open run keeps beside the warehouse, so that its end is written even when the disk is full
(docs/nightly.md, "Run states"): `<db dir>/<db name>-runs/open/run-N.json` holds who the run is, padded with
RESERVE_BYTES of space; when the warehouse cannot take the run's end, the end goes into the file (which gives
the padding back), and the next start records the run from it (caseforge.run_record)."""
from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path

from caseforge.settings import load_settings

log = logging.getLogger(__name__)

RESERVE_BYTES = 256 * 1024          # room kept free for writing a run's end (one UPDATE is a few hundred bytes)
OPEN_RUNS_FOLDER = "open"


def open_runs_folder(db_path: Path) -> Path:
    return load_settings(db_path).runs_dir / OPEN_RUNS_FOLDER


def open_file(db_path: Path | None, run_id: int) -> Path | None:
    return open_runs_folder(db_path) / f"run-{run_id}.json" if db_path else None


def write_open_file(path: Path, record: dict) -> None:
    """The run's record, then spaces up to RESERVE_BYTES: disk space this run can give back when it must write
    its end on a full disk. Best effort (a full disk at the start leaves the run without one)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(record, default=str).encode()
        with path.open("wb") as out:
            out.write(text + b" " * max(0, RESERVE_BYTES - len(text)))
    except OSError as exc:
        log.debug("no open-run file for run %s: %s", record.get("run_id"), exc)


def read_open_file(path: Path) -> dict | None:
    try:
        return json.loads(path.read_bytes().strip() or b"null")
    except (OSError, ValueError):
        return None


def unwritten_end(db_path: Path | None, run_id: int) -> dict | None:
    """The end a run could not write to the warehouse, kept in its open-run file (None: none kept)."""
    path = open_file(db_path, run_id)
    record = read_open_file(path) if path is not None and path.exists() else None
    return record.get("end") if isinstance(record, dict) else None


def note_end_in_open_file(path: Path | None, end: dict) -> bool:
    """Writes the run's end over its open file, in place (no new disk space needed), and gives the padding back."""
    if path is None:
        return False
    record = read_open_file(path) or {}
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


def remove_open_file(db_path: Path | None, run_id: int) -> None:
    path = open_file(db_path, run_id)
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
