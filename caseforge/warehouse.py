"""The DuckDB warehouse: connection, numbered migrations, staging writes, curated exports."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import duckdb
import pandas as pd

from caseforge.settings import SQL_DIR, Settings, load_settings
from caseforge import processes
from caseforge.atomic import link_atomically, staging_name, write_atomically

log = logging.getLogger(__name__)

MIGRATIONS_DIR = SQL_DIR / "migrations"
_MIGRATION_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")
# What may be written into a statement's text: a plain or schema-qualified name, never a value.
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


# Two threads opening the same file at once race in DuckDB's instance cache ("Unique file handle
# conflict"); parallel sources open their connections one at a time.
_CONNECT_LOCK = threading.Lock()


class WarehouseError(RuntimeError):
    """The warehouse cannot be used as asked, for an ordinary reason said in one line (exit 2): not a crash."""


class WarehouseBusy(WarehouseError):
    """Another process holds the DuckDB file (DuckDB allows a single writer, or readers)."""


class WarehouseCorrupt(WarehouseError):
    """The file is not a DuckDB database, or DuckDB found it damaged."""


class WarehouseTooNew(WarehouseError):
    """ops.migrations names a migration this caseforge does not have: a newer caseforge made the warehouse."""


class QueryStopped(WarehouseError):
    """An ad-hoc query stopped at one of its bounds (time, memory), or to let a waiting run have the file."""


def migration_files() -> list[tuple[int, Path]]:
    found: dict[int, Path] = {}
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise ValueError(f"migration file name must look like 001_name.sql: {path.name}")
        number = int(match.group(1))
        if number in found:
            raise ValueError(f"two migrations share number {number:03d}: {found[number].name}, {path.name}")
        found[number] = path
    return sorted(found.items())


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply every migration not yet recorded in ops.migrations; return the names applied."""
    run_sql(con, "ops/create_migrations_table.sql")
    done = {row[0] for row in run_sql(con, "ops/applied_migrations.sql").fetchall()}
    applied = []
    for number, path in migration_files():
        if number in done:
            continue
        with transaction(con):
            con.execute(path.read_text(encoding="utf-8"))
            run_sql(con, "ops/record_migration.sql", [number, path.name])
        applied.append(path.name)
    if applied:
        # DuckDB 1.5.5 cannot replay a WAL holding an ALTER TABLE of a table whose default calls nextval()
        # (ops.runs, migration 113): a process killed before the next checkpoint left a warehouse nothing
        # could open. A checkpoint right after the migrations leaves no such record in the WAL.
        run_sql(con, "ops/checkpoint.sql")
    return applied


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """BEGIN … COMMIT, or ROLLBACK and re-raise: all of a write lands, or none of it.

    The one place transaction control is written inline (docs/sql.md)."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def refuse_unknown_migrations(con: duckdb.DuckDBPyConnection, db_path: Path) -> None:
    """WarehouseTooNew when ops.migrations names a migration this caseforge does not have: its tables may
    not be what this caseforge's statements expect (a positional INSERT into a renamed table's columns)."""
    if not table_exists(con, "ops.migrations"):
        return
    known = dict(migration_files())
    unknown = sorted({row[0] for row in run_sql(con, "ops/applied_migrations.sql").fetchall()} - set(known))
    if unknown:
        raise WarehouseTooNew(f"{db_path} was made by a newer caseforge (migration {unknown[-1]}); this caseforge "
                              f"knows migrations up to {max(known, default=0)}: use the caseforge that made it, or a "
                              "newer one")


# --- who holds the file, and a writer that waits for it ---

_LOCK_HELD = re.compile(r"Could not set lock on file|Conflicting lock is held")
_CORRUPT = re.compile(r"Corrupt database file|not a valid DuckDB database file")
_HOLDER_PID = re.compile(r"\(PID (\d+)\)")
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


@contextmanager
def open_warehouse(db_path: str | Path, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(db_path, read_only=read_only)
    try:
        yield con
    finally:
        con.close()


def sql_text(relative: str, **identifiers: str | tuple[str, ...]) -> str:
    """A statement file from sql/ (where SQL lives: docs/sql.md).

    `{name}` placeholders are filled from `identifiers`, which must be table or column names (checked), or a
    tuple of column names (filled comma-separated, e.g. a key of two columns); values are never written into
    the text, they are bound as parameters.
    """
    path = SQL_DIR / relative
    if not path.exists():
        raise FileNotFoundError(f"missing SQL file {path}")
    text = path.read_text(encoding="utf-8")
    if not identifiers:
        return text
    for name, value in identifiers.items():
        names = value if isinstance(value, tuple) and value else (value,)
        if not all(isinstance(v, str) and _IDENTIFIER.match(v) for v in names):
            raise ValueError(f"{relative}: {{{name}}} must be an identifier, not {value!r}")

    def fill(match: re.Match) -> str:
        if match.group(1) not in identifiers:
            raise KeyError(f"{relative}: no value for {{{match.group(1)}}}")
        value = identifiers[match.group(1)]
        return ", ".join(value) if isinstance(value, tuple) else value

    return _PLACEHOLDER.sub(fill, text)


def run_sql(con: duckdb.DuckDBPyConnection, relative: str, params: dict | list | None = None,
            identifiers: dict[str, str | tuple[str, ...]] | None = None):
    statement = sql_text(relative, **(identifiers or {}))
    return con.execute(statement, params) if params is not None else con.execute(statement)


def replace_staging(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> None:
    """Replace staging.<table> by this batch; the columns must match the staging DDL."""
    con.register("_batch", frame)
    try:
        run_sql(con, "ops/clear_staging_table.sql", identifiers={"table": table})
        # inline by rule (docs/sql.md): the column list is the batch's own
        columns = ", ".join(f'"{c}"' for c in frame.columns)
        con.execute(f"INSERT INTO staging.{table} ({columns}) SELECT {columns} FROM _batch")
    finally:
        con.unregister("_batch")


def curated_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in run_sql(con, "ops/curated_base_tables.sql").fetchall()]


# The ops tables the mirror carries besides curated, so `caseforge status`, `quality` and `llm stats` (and
# queries on them) answer while a run holds the file. The archive, the LLM cache (its per-step statistics,
# the view llm_call_stats, are mirrored) and the bookkeeping of single stages stay out: they are large or only
# the pipeline reads them.
MIRRORED_OPS_TABLES = ("runs", "nightly_stages", "quality_results", "quarantine", "input_fingerprints",
                       "llm_call_stats")
MIRROR_MANIFEST = "MIRROR.json"

# The ad-hoc query connection (open_for_query): the warehouse and its own mirror, nothing else. DuckDB's
# own settings do it, then lock_configuration so no statement can set them back (measured on 1.5.5:
# COPY TO, EXPORT, ATTACH, read_text/read_csv/glob, INSTALL/LOAD and SET/RESET are all refused).
QUERY_SANDBOX = {
    "enable_external_access": False,        # no file or URL but the database itself; no ATTACH, no COPY TO
    "autoinstall_known_extensions": False,  # no download of an extension a query names
    "autoload_known_extensions": False,
}


# How the mirror is laid out (README "Everything that belongs to one warehouse"): `<db>-parquet` is a link to
# one generation folder `<db>-parquet.d/NNNNNNNN/` holding MIRROR.json and every table's files, so a reader that
# resolves the link once reads one consistent write; a write builds the next generation under a `.….tmp` name
# and swaps the link. A table whose rows carry a stamp that every write sets (MIRROR_STAMP_COLUMN, or an
# append-only ops table's time) is a folder `<table>.parquet/` of parts by stamp range: a run writes the parts
# whose rows changed and a part for its new rows; every other table is one file, written when its content hash
# changed. Files left unchanged are hard links to the previous generation's.
MIRROR_STAMP_COLUMN = "updated_at"
APPEND_ONLY_STAMPS = {"ops.quality_results": "validated_at", "ops.quarantine": "quarantined_at"}
MIRROR_MAX_PARTS = 16
_STAMP_LOW, _STAMP_HIGH = -(2 ** 62), 2 ** 62      # epoch-µs bounds of the first and the newest part
_MIRROR_LOCK = threading.Lock()                     # parallel sources of one process mirror one at a time


def mirror_generations(parquet_dir: Path) -> Path:
    """The folder of the mirror's generations, beside the link `parquet_dir` that names the current one."""
    return parquet_dir.with_name(parquet_dir.name + ".d")


def remove_mirror_debris(parquet_dir: Path) -> list[Path]:
    """Remove what a mirror write killed midway left (every staging name starts with '.' and ends with '.tmp')
    that is older than this process, so never the staging of a write still running; returns what went."""
    found = [*mirror_generations(parquet_dir).glob(".*.tmp"), *parquet_dir.parent.glob(f".{parquet_dir.name}.*.tmp")]
    started = processes.started_at()
    removed = []
    for path in found:
        try:
            if path.lstat().st_mtime >= started:
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed


class _MirrorWrite:
    """One write of the mirror: the next generation, staged in `staging`, reusing `previous` where it can."""

    def __init__(self, con: duckdb.DuckDBPyConnection, staging: Path, number: int,
                 previous: dict | None, previous_folder: Path | None):
        self.con, self.staging, self.number = con, staging, number
        self.previous = (previous or {}).get("tables", {}) if isinstance((previous or {}).get("tables"), dict) else {}
        self.previous_folder = previous_folder
        self.written = 0
        self.columns: dict[str, list] = {}
        for schema, table, column, kind in run_sql(con, "ops/table_columns.sql").fetchall():
            self.columns.setdefault(f"{schema}.{table}", []).append([column, kind])
        self.keys = {f"{schema}.{table}": tuple(columns)
                     for schema, table, columns in run_sql(con, "ops/primary_keys.sql").fetchall()}

    def table(self, name: str) -> dict:
        schema, _, table = name.partition(".")
        relative = f"{table}.parquet" if schema == "curated" else f"{schema}/{table}.parquet"
        (self.staging / relative).parent.mkdir(parents=True, exist_ok=True)
        columns = hashlib.sha256(json.dumps(self.columns.get(name, [])).encode()).hexdigest()[:16]
        stamp = APPEND_ONLY_STAMPS.get(name) or (
            MIRROR_STAMP_COLUMN if any(c == MIRROR_STAMP_COLUMN for c, _ in self.columns.get(name, [])) else None)
        old = self.previous.get(name) or {}
        if old.get("columns") != columns or old.get("stamp") != stamp:
            old = {}
        if stamp is None:
            parts = self._whole(name, relative, old.get("parts", []))
        else:
            parts = self._parts(name, relative, stamp, old.get("parts", []))
        return {"columns": columns, "stamp": stamp, "parts": parts}

    def _keep(self, part: dict) -> bool:
        """Hard-link a part of the previous generation into this one (a copy where links fail)."""
        source = (self.previous_folder / part["file"]) if self.previous_folder else None
        if source is None or not source.is_file():
            return False
        target = self.staging / part["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
        return True

    def _whole(self, name: str, relative: str, old_parts: list[dict]) -> list[dict]:
        rows, content = run_sql(self.con, "ops/table_fingerprint.sql", identifiers={"table": name}).fetchone()
        part = {"file": relative, "rows": int(rows), "hash": str(content)}
        if len(old_parts) == 1 and {k: old_parts[0].get(k) for k in part} == part and self._keep(part):
            return [part]
        run_sql(self.con, "ops/mirror_table_to_parquet.sql", {"path": (self.staging / relative).as_posix()},
                identifiers={"table": name})
        self.written += 1
        return [part]

    def _parts(self, name: str, relative: str, stamp: str, old_parts: list[dict]) -> list[dict]:
        key = self.keys.get(name) or (stamp,)
        uppers = [int(p["upper"]) for p in old_parts]
        found = {int(part): (int(rows), int(newest), str(content)) for part, rows, newest, content in run_sql(
            self.con, "ops/mirror_part_fingerprints.sql",
            {"lowers": [_STAMP_LOW, *uppers], "uppers": [*uppers, _STAMP_HIGH]},
            identifiers={"table": name, "stamp": stamp, "key": key}).fetchall()}
        if not found and len(old_parts) == 1 and old_parts[0]["rows"] == 0 and self._keep(old_parts[0]):
            return old_parts                    # empty before and now: its empty part stands
        parts, lower = [], _STAMP_LOW
        for index, old in enumerate(old_parts):
            rows, _, content = found.get(index, (0, 0, "0"))
            if rows:
                part = {"file": old["file"], "upper": old["upper"], "rows": rows, "hash": content}
                if (old.get("rows"), old.get("hash")) != (rows, content) or not self._keep(part):
                    part["file"] = self._write_part(name, relative, stamp, lower, int(old["upper"]), len(parts))
                parts.append(part)
            lower = int(old["upper"])           # an emptied part's range joins the next part's: it holds no rows
        rows, newest, content = found.get(len(old_parts), (0, 0, "0"))
        if rows:
            parts.append({"file": self._write_part(name, relative, stamp, lower, newest, len(parts)),
                          "upper": newest, "rows": rows, "hash": content})
        while len(parts) > MIRROR_MAX_PARTS:
            parts = self._merge_smallest(name, relative, stamp, parts)
        if not parts:                           # no rows: one empty part, so the table and its columns are there
            parts = [{"file": self._write_part(name, relative, stamp, _STAMP_LOW, _STAMP_LOW, 0),
                      "upper": _STAMP_LOW, "rows": 0, "hash": "0"}]
        return parts

    def _merge_smallest(self, name: str, relative: str, stamp: str, parts: list[dict]) -> list[dict]:
        i = min(range(len(parts) - 1), key=lambda j: parts[j]["rows"] + parts[j + 1]["rows"])
        lower = int(parts[i - 1]["upper"]) if i else _STAMP_LOW
        merged = {"upper": parts[i + 1]["upper"], "rows": parts[i]["rows"] + parts[i + 1]["rows"],
                  "hash": str(int(parts[i]["hash"]) + int(parts[i + 1]["hash"]))}
        for gone in (parts[i], parts[i + 1]):
            (self.staging / gone["file"]).unlink(missing_ok=True)
        merged["file"] = self._write_part(name, relative, stamp, lower, int(merged["upper"]), i)
        return [*parts[:i], merged, *parts[i + 2:]]

    def _write_part(self, name: str, relative: str, stamp: str, lower: int, upper: int, index: int) -> str:
        file = f"{relative}/{self.number:08d}-{index:03d}.parquet"
        while (self.staging / file).exists():
            index += 1000
            file = f"{relative}/{self.number:08d}-{index:03d}.parquet"
        (self.staging / file).parent.mkdir(parents=True, exist_ok=True)
        run_sql(self.con, "ops/mirror_part_to_parquet.sql",
                {"path": (self.staging / file).as_posix(), "lower": lower, "upper": upper},
                identifiers={"table": name, "stamp": stamp})
        self.written += 1
        return file


def _current_generation(parquet_dir: Path) -> tuple[Path, dict] | None:
    """The generation folder the mirror link names and its manifest, if it has one of its own."""
    if not parquet_dir.is_symlink():
        return None
    folder = parquet_dir.resolve()
    try:
        return folder, json.loads((folder / MIRROR_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _swap_link(parquet_dir: Path, generation: Path) -> None:
    """Point `parquet_dir` at `generation` in one rename. A mirror of before generations (a plain folder) is
    moved aside first, once: for that instant there is no mirror, never a mixed one."""
    relative = os.path.relpath(generation, parquet_dir.parent)
    if parquet_dir.is_dir() and not parquet_dir.is_symlink():
        aside = parquet_dir.with_name(staging_name(parquet_dir.name))
        parquet_dir.rename(aside)
        link_atomically(parquet_dir, relative)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        link_atomically(parquet_dir, relative)


def export_curated_parquet(con: duckdb.DuckDBPyConnection, out_dir: Path) -> list[Path]:
    """Mirror every curated table (and nothing else of curated) and the ops tables in MIRRORED_OPS_TABLES to
    Parquet as the next generation of the mirror at `out_dir`, swapped in whole (a reader sees the previous
    generation or this one, never a mix), with a manifest naming the database it was written from and when
    (open_for_query reads only a mirror of its own database). Only what changed is written: see the layout
    above. All tables are read in one transaction, so they show one moment of the warehouse; DuckDB streams
    each COPY to its file. Returns the curated tables' paths under `out_dir`."""
    out_dir = Path(out_dir)
    with _MIRROR_LOCK:
        generations = mirror_generations(out_dir)
        generations.mkdir(parents=True, exist_ok=True)
        remove_mirror_debris(out_dir)
        database = run_sql(con, "ops/database_path.sql").fetchone()[0]
        database = str(Path(database).resolve()) if database else None
        current = _current_generation(out_dir)
        if current is not None and current[1].get("database") != database:
            current = None                      # another warehouse's mirror: nothing of it is reused
        number = 1 + max((int(p.name) for p in generations.iterdir() if p.name.isdigit()), default=0)
        staging = generations / f".{number:08d}.{os.getpid()}.{threading.get_ident()}.tmp"
        staging.mkdir()
        write = _MirrorWrite(con, staging, number, current[1] if current else None, current[0] if current else None)
        tables = {}
        with transaction(con):
            curated = [f"curated.{t}" for t in curated_tables(con)]
            ops = [f"ops.{t}" for t in MIRRORED_OPS_TABLES if table_exists(con, f"ops.{t}")]
            for name in curated + ops:
                tables[name] = write.table(name)
        manifest = {"database": database, "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "generation": number, "previous": current[0].name if current else None,
                    "files_written": write.written, "tables": tables}
        (staging / MIRROR_MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        final = generations / f"{number:08d}"
        staging.rename(final)
        _swap_link(out_dir, final)
        keep = {final.name, current[0].name if current else None}
        for old in generations.iterdir():       # the previous generation stays for readers that resolved it
            if old.name.isdigit() and old.name not in keep:
                shutil.rmtree(old, ignore_errors=True)
    return [out_dir / tables[name]["parts"][0]["file"].split("/")[0] for name in curated]


@dataclass(frozen=True)
class Mirror:
    """A Parquet mirror that belongs to the warehouse being queried: one generation of it."""

    folder: Path
    written_at: datetime
    files: dict[str, tuple[Path, ...]]          # schema.table -> its files (one, or the parts of a folder)

    def age(self, now: datetime | None = None) -> str:
        seconds = max(0, int(((now or datetime.now(timezone.utc)) - self.written_at).total_seconds()))
        if seconds < 120:
            return f"{seconds} s"
        if seconds < 2 * 3600:
            return f"{seconds // 60} min"
        if seconds < 2 * 86400:
            return f"{seconds // 3600} h {seconds % 3600 // 60} min"
        return f"{seconds // 86400} days"

    def note(self, db_path: Path) -> str:
        return (f"note: {db_path} is held by another process (a run is writing it); answering from its Parquet "
                f"mirror {self.folder}, written {self.written_at:%Y-%m-%d %H:%M:%S} UTC ({self.age()} ago), "
                f"which has curated.* and {', '.join(t for t in self.files if not t.startswith('curated.'))}")


def _manifest_files(folder: Path, tables) -> dict[str, list[Path]]:
    if isinstance(tables, list):                # a mirror written before generations: one file per table
        return {name: [folder / (f"{name.partition('.')[2]}.parquet" if name.startswith("curated.")
                                 else f"{name.partition('.')[0]}/{name.partition('.')[2]}.parquet")]
                for name in tables if isinstance(name, str)}
    return {name: [folder / part["file"] for part in entry.get("parts", [])] for name, entry in tables.items()}


def find_mirror(db_path: Path, parquet_dir: Path) -> Mirror:
    """The mirror of `db_path` in `parquet_dir`: the generation its link names, resolved once, so every file
    read belongs to one write. WarehouseBusy-worthy reason (ValueError) when there is none, when it was
    written from another database, or when it predates the manifest."""
    folder = Path(parquet_dir).resolve()
    manifest_path = folder / MIRROR_MANIFEST
    if not manifest_path.exists():
        raise ValueError(f"no Parquet mirror of it at {parquet_dir}" if not any(folder.glob("*.parquet"))
                         else f"{parquet_dir} has no {MIRROR_MANIFEST} saying which database it mirrors")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    own = str(Path(db_path).resolve())
    if manifest.get("database") != own:
        raise ValueError(f"the Parquet mirror at {parquet_dir} belongs to {manifest.get('database')}, not {own}")
    files = {}
    for name, paths in _manifest_files(folder, manifest.get("tables", [])).items():
        schema = name.partition(".")[0]
        if _IDENTIFIER.match(name) and schema in ("curated", "ops") and paths and all(p.is_file() for p in paths):
            files[name] = tuple(paths)
    return Mirror(Path(parquet_dir), datetime.fromisoformat(manifest["written_at"]), files)


def open_mirror(mirror: Mirror, folder: Path, name: str = "mirror", config: dict | None = None
                ) -> duckdb.DuckDBPyConnection:
    """A read-only database over the mirror, sandboxed like the file: its curated.* and ops.* views read the
    mirror's files.

    The views are written once to `<folder>/<name>.duckdb` (a throwaway file), which is then opened
    read-only, so `CREATE`, `DROP`, `INSERT` and `ATTACH` are refused as they are on the warehouse itself,
    with the same errors (an in-memory database would take them). The files are handed to DuckDB as Arrow
    datasets, so DuckDB itself opens no path at all: allowing the mirror's folder or files instead
    (allowed_directories / allowed_paths) would also let a query write there (measured on 1.5.5:
    COPY ... TO '<mirror file>' (FORMAT parquet, USE_TMP_FILE false) overwrites it)."""
    import pyarrow.dataset as ds

    datasets = {"_mirror_" + table.replace(".", "_"): ds.dataset([str(p) for p in paths], format="parquet")
                for table, paths in sorted(mirror.files.items())}
    views = folder / f"{name}.duckdb"
    with duckdb.connect(str(views), config=QUERY_SANDBOX) as writer:
        for schema in sorted({table.partition(".")[0] for table in mirror.files} | {"curated"}):
            writer.execute(f"CREATE SCHEMA {schema}")      # inline by rule (docs/sql.md): the reader's own schemas
        for table in sorted(mirror.files):
            hidden = "_mirror_" + table.replace(".", "_")
            writer.register(hidden, datasets[hidden])
            # inline by rule (docs/sql.md): a view over the registered dataset; `table` is a checked identifier
            writer.execute(f"CREATE VIEW {table} AS SELECT * FROM {hidden}")
    con = duckdb.connect(str(views), read_only=True, config={**QUERY_SANDBOX, **(config or {})})
    for hidden, dataset in datasets.items():
        con.register(hidden, dataset)
    con.execute("SET lock_configuration = true")   # inline by rule (docs/sql.md): a connection setting
    return con


@dataclass(frozen=True)
class QueryBounds:
    """What an ad-hoc query may use (Settings.query_*): seconds per statement (0: no limit), DuckDB's memory
    limit, the most it may spill, and where (a folder of its own under temp_root, removed at the end)."""

    timeout_s: float
    memory_limit: str
    temp_limit: str
    temp_root: Path

    @classmethod
    def of(cls, settings: Settings | None = None) -> "QueryBounds":
        settings = settings or load_settings()
        return cls(settings.query_timeout_s, settings.query_memory_limit or default_memory_limit(),
                   settings.query_temp_limit, Path(settings.query_temp_dir or tempfile.gettempdir()))

    def duckdb_config(self, temp_dir: Path) -> dict:
        return {"memory_limit": self.memory_limit, "max_temp_directory_size": self.temp_limit,
                "temp_directory": str(temp_dir)}


def default_memory_limit() -> str:
    """A quarter of this machine's memory (or of its cgroup's limit): DuckDB's own default is 80%, which
    leaves a running pipeline little."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        total = min(total, int(limit)) if limit.isdigit() else total
    except OSError:
        pass
    return f"{max(64, total // 4 // 1_000_000)}MB"


QUERY_FOLDER_PREFIX = "caseforge-query-"


def _remove_orphaned_query_folders(root: Path) -> None:
    """Temporary folders of queries whose process is gone (killed: a spill can be gigabytes)."""
    for folder in root.glob(f"{QUERY_FOLDER_PREFIX}*-*"):
        pid = folder.name[len(QUERY_FOLDER_PREFIX):].split("-", 1)[0]
        if not pid.isdigit():
            continue
        if processes.alive(int(pid)) is False:
            shutil.rmtree(folder, ignore_errors=True)


class QueryConnection:
    """open_for_query's connection: a DuckDB connection (every attribute passes through) whose statements a
    watchdog thread stops, with DuckDB's interrupt(), when they run longer than `timeout_s`, or, on the
    warehouse file, as soon as a run waits for the file (writer_waiting): the query stops and says so
    (QueryStopped) instead of the run failing. Closing it removes its temporary folder."""

    POLL_S = 0.2

    def __init__(self, con: duckdb.DuckDBPyConnection, mode: str, db_path: Path, bounds: QueryBounds,
                 workdir: Path):
        self._con, self.mode, self.db_path, self.bounds, self._workdir = con, mode, Path(db_path), bounds, workdir
        self.timeout_s = bounds.timeout_s
        self._running: tuple[int, float] | None = None      # (statement number, started) while one runs
        self._statements = 0
        self._stopped: dict[int, str] = {}
        self._closed = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="caseforge-query-watchdog", daemon=True)
        self._watchdog.start()
        self._remove_workdir = weakref.finalize(self, shutil.rmtree, workdir, True)   # at exit, if never closed

    def __getattr__(self, name):
        return getattr(self._con, name)

    def __enter__(self) -> "QueryConnection":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _yield_reason(self) -> str | None:
        if self.mode != "warehouse":
            return None                      # the mirror holds no lock on the file
        waiting = writer_waiting(self.db_path)
        if waiting is None:
            return None
        who = f"PID {waiting.get('pid')}" + (f", {waiting['command']}" if waiting.get("command") else "")
        return (f"query stopped: a run needs the warehouse ({who}) and is waiting to write {self.db_path}; "
                "ask again when it is done (meanwhile queries answer from the Parquet mirror)")

    def _timeout_reason(self) -> str:
        return (f"query stopped after {self.timeout_s:g} s, its statement timeout (--timeout S on `caseforge sql`, "
                "or CASEFORGE_QUERY_TIMEOUT_S; 0 for none)")

    def _watch(self) -> None:
        while not self._closed.wait(self.POLL_S):
            running = self._running
            if running is None:
                continue
            number, started = running
            reason = self._yield_reason()
            if reason is None and self.timeout_s and time.monotonic() - started >= self.timeout_s:
                reason = self._timeout_reason()
            if reason and self._running == running:
                self._stopped[number] = reason
                try:
                    self._con.interrupt()
                except duckdb.Error:
                    return                   # closed meanwhile

    def execute(self, *args, **kwargs):
        reason = self._yield_reason()
        if reason:
            raise QueryStopped(reason)
        self._statements += 1
        number = self._statements
        self._running = (number, time.monotonic())
        try:
            return self._con.execute(*args, **kwargs)
        except duckdb.InterruptException as exc:
            raise QueryStopped(self._stopped.get(number, "query interrupted")) from exc
        except duckdb.OutOfMemoryException as exc:
            first = " ".join(str(exc).split("\n\n")[0].split())
            raise QueryStopped(f"query stopped: it needs more than its memory limit of {self.bounds.memory_limit} "
                               f"and temporary spill of {self.bounds.temp_limit} under {self.bounds.temp_root} "
                               f"(CASEFORGE_QUERY_MEMORY_LIMIT, CASEFORGE_QUERY_TEMP_LIMIT, "
                               f"CASEFORGE_QUERY_TEMP_DIR): {first}") from exc
        finally:
            self._running = None

    def close(self) -> None:
        self._closed.set()
        try:
            self._con.close()
        finally:
            self._remove_workdir()


def open_for_query(db_path: Path, parquet_dir: Path, bounds: QueryBounds | None = None
                   ) -> tuple[QueryConnection, str]:
    """The connection for ad-hoc SQL (`caseforge sql`, `quality`, `status`): read-only on the warehouse,
    or, while a run holds the file (or waits for it), a read-only reader over this warehouse's own Parquet
    mirror (a note on stderr says so and how old it is). Either way sandboxed (QUERY_SANDBOX, locked):
    nothing outside the warehouse and its mirror can be read or written, nothing created, attached,
    installed or loaded; and bounded (QueryBounds: statement timeout, memory, temporary spill). A corrupt
    warehouse or one made by a newer caseforge is an error, never answered from the mirror.
    Returns the connection and "warehouse" or "parquet"."""
    bounds = bounds or QueryBounds.of()
    bounds.temp_root.mkdir(parents=True, exist_ok=True)
    _remove_orphaned_query_folders(bounds.temp_root)
    workdir = Path(tempfile.mkdtemp(prefix=f"{QUERY_FOLDER_PREFIX}{os.getpid()}-", dir=bounds.temp_root))
    config = {**QUERY_SANDBOX, **bounds.duckdb_config(workdir / "spill")}
    try:
        try:
            waiting = writer_waiting(db_path)
            if waiting:                      # a run waits for the file: do not take it from under it
                raise WarehouseBusy(f"{db_path} is busy: a run (PID {waiting.get('pid')}) is waiting to write it")
            con, mode = connect(db_path, read_only=True, config={**config, "lock_configuration": True}), "warehouse"
        except WarehouseBusy as busy:
            try:
                mirror = find_mirror(Path(db_path), Path(parquet_dir))
            except ValueError as reason:
                raise WarehouseBusy(f"{busy}; {reason}") from busy
            con, mode = open_mirror(mirror, workdir, Path(db_path).stem, config), "parquet"
            print(mirror.note(Path(db_path)), file=sys.stderr)
        return QueryConnection(con, mode, Path(db_path), bounds, workdir), mode
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise


def table_exists(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether `schema.table` exists in the warehouse."""
    schema, _, name = table.partition(".")
    if not schema or not name:
        raise ValueError(f"a table is named schema.table: {table!r}")
    return run_sql(con, "ops/table_exists.sql", [schema, name]).fetchone()[0] > 0


def run_sql_over_rows(con: duckdb.DuckDBPyConnection, relative: str, rows: list[dict]) -> None:
    """Run sql/<relative> over `rows`, visible to it as the relation _rows: one statement, all or nothing,
    much faster than one statement per row."""
    if not rows:
        return
    con.register("_rows", pd.DataFrame(rows))
    try:
        run_sql(con, relative)
    finally:
        con.unregister("_rows")
