"""Digests of replayed files that did not change since they were hashed (ops.file_digests, migration 172): a
folder replayed night after night (`--from-dir`, `--from-samples`) is read and hashed only where a file is new or
changed, so a night costs what is new in it, not everything the folder holds.

A recorded sha256 stands for a file while its path, device, inode, size, modification time and change time are all
what they were when it was hashed. The change time (ctime) moves with every write to the file, its data or its
attributes, and no program can set it back (only the system clock could); a file replaced by another has another
inode. A file whose change time is within RACY_S of the moment it was hashed is not recorded: a write in the same
clock tick could leave every stamp as it was (git's "racy" case), so it is hashed again next time."""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from caseforge.warehouse.statements import run_sql, run_sql_over_rows, table_exists

RACY_S = 2.0


@dataclass(frozen=True)
class DigestedFile:
    """A replayed file as a ledger (caseforge.archive.ParsedPayloads.plan) needs it before it is read: the key
    it is archived under and its digest."""

    key: str
    sha256: str


def _stamp(found: os.stat_result) -> tuple[int, int, int, int, int]:
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns


class FileDigests:
    """The digests of one source's replayed files: `sha256(path)` reads and hashes a file only when its recorded
    digest does not stand; `save()` records what this run hashed (one statement pair)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, source: str):
        self.con, self.source = con, source
        self.known = {}
        if table_exists(con, "ops.file_digests"):
            self.known = {path: (tuple(stamp), sha) for path, *stamp, sha in
                          run_sql(con, "ops/file_digests.sql", [source]).fetchall()}
        self.hashed: list[dict] = []
        self.read = 0                                 # files read and hashed by this run (the rest were known)

    def sha256(self, path: Path) -> str:
        """The file's sha256: recorded when its stamps are as they were, else read and hashed now. A link is
        followed (its target's inode is in the stamps: a link pointed elsewhere is another file)."""
        name = os.path.abspath(path)
        before = os.stat(name)
        recorded = self.known.get(name)
        if recorded is not None and recorded[0] == _stamp(before):
            return recorded[1]
        started = time.time_ns()
        digest = hashlib.sha256(Path(name).read_bytes()).hexdigest()
        after = os.stat(name)
        self.read += 1
        if _stamp(after) == _stamp(before) and after.st_ctime_ns < started - RACY_S * 1e9:
            self.hashed.append({"source": self.source, "path": name, "device": after.st_dev, "inode": after.st_ino,
                                "size": after.st_size, "mtime_ns": after.st_mtime_ns, "ctime_ns": after.st_ctime_ns,
                                "sha256": digest, "recorded_at": datetime.now(timezone.utc)})
        return digest

    def save(self, report=None, counter: str = "files_hashed") -> None:
        """Record what this run hashed; with `report`, count the files it read under `counter`."""
        if self.hashed and table_exists(self.con, "ops.file_digests"):
            run_sql_over_rows(self.con, "ops/remember_file_digests.sql", self.hashed)
        self.hashed = []
        if report is not None and self.read:
            report.add(counter, self.read)
            self.read = 0
