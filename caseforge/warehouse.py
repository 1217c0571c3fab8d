"""The DuckDB warehouse: connection, numbered migrations, staging writes, curated exports."""
from __future__ import annotations

import json
import os
import re
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import duckdb
import pandas as pd

from caseforge.config import SQL_DIR

MIGRATIONS_DIR = SQL_DIR / "migrations"
_MIGRATION_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")
# What may be written into a statement's text: a plain or schema-qualified name, never a value.
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


# Two threads opening the same file at once race in DuckDB's instance cache ("Unique file handle
# conflict"); parallel sources open their connections one at a time.
_CONNECT_LOCK = threading.Lock()


class WarehouseBusy(RuntimeError):
    """Another process holds the DuckDB file (DuckDB allows a single writer)."""


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


def connect(db_path: str | Path, read_only: bool = False, config: dict | None = None) -> duckdb.DuckDBPyConnection:
    """Open the warehouse; a writable connection is migrated to the latest schema first.

    `config`: DuckDB settings applied as the database opens (open_for_query's sandbox)."""
    db_path = Path(db_path)
    if read_only and not db_path.exists():
        raise FileNotFoundError(f"no warehouse at {db_path}; run an ingest first or pass --db")
    if not read_only:
        db_path.parent.mkdir(parents=True, exist_ok=True)
    with _CONNECT_LOCK:
        try:
            con = duckdb.connect(str(db_path), read_only=read_only, config=config or {})
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise WarehouseBusy(f"{db_path} is held by another caseforge process: {exc}") from exc
            raise
        if not read_only:
            migrate(con)
    return con


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


def _mirror_one(con: duckdb.DuckDBPyConnection, table: str, final: Path) -> None:
    # unique per writer: sources of one nightly run in parallel threads and each mirrors at its end
    tmp = final.parent / f".{final.stem}.{os.getpid()}.{threading.get_ident()}.parquet.tmp"
    run_sql(con, "ops/mirror_table_to_parquet.sql", {"path": tmp.as_posix()}, identifiers={"table": table})
    tmp.replace(final)


def export_curated_parquet(con: duckdb.DuckDBPyConnection, out_dir: Path) -> list[Path]:
    """Mirror every curated table (and nothing else of curated) to Parquet, atomically per file, plus the
    ops tables in MIRRORED_OPS_TABLES under `ops/`, and a manifest naming the database it was written from
    and when (open_for_query reads only a mirror of its own database). Returns the curated files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    tables = curated_tables(con)
    # A table that left curated (e.g. a CaseFacts stage table, now in build) leaves the mirror too.
    for stale in sorted(out_dir.glob("*.parquet")):
        if stale.stem not in tables:
            stale.unlink(missing_ok=True)
    for table in tables:
        final = out_dir / f"{table}.parquet"
        _mirror_one(con, f"curated.{table}", final)
        written.append(final)
    (out_dir / "ops").mkdir(exist_ok=True)
    mirrored = [f"curated.{t}" for t in tables]
    for table in MIRRORED_OPS_TABLES:
        if table_exists(con, f"ops.{table}"):
            _mirror_one(con, f"ops.{table}", out_dir / "ops" / f"{table}.parquet")
            mirrored.append(f"ops.{table}")
    database = run_sql(con, "ops/database_path.sql").fetchone()[0]
    manifest = {"database": str(Path(database).resolve()) if database else None,
                "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "tables": mirrored}
    tmp = out_dir / f".{MIRROR_MANIFEST}.{os.getpid()}.{threading.get_ident()}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    tmp.replace(out_dir / MIRROR_MANIFEST)
    return written


@dataclass(frozen=True)
class Mirror:
    """A Parquet mirror that belongs to the warehouse being queried."""

    folder: Path
    written_at: datetime
    files: dict[str, Path]          # schema.table -> file

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


def find_mirror(db_path: Path, parquet_dir: Path) -> Mirror:
    """The mirror of `db_path` in `parquet_dir`; WarehouseBusy-worthy reason (ValueError) when there is none,
    when it was written from another database, or when it predates the manifest."""
    manifest_path = parquet_dir / MIRROR_MANIFEST
    if not manifest_path.exists():
        raise ValueError(f"no Parquet mirror of it at {parquet_dir}" if not any(parquet_dir.glob("*.parquet"))
                         else f"{parquet_dir} has no {MIRROR_MANIFEST} saying which database it mirrors")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    own = str(Path(db_path).resolve())
    if manifest.get("database") != own:
        raise ValueError(f"the Parquet mirror at {parquet_dir} belongs to {manifest.get('database')}, not {own}")
    files = {}
    for name in manifest.get("tables", []):
        schema, _, table = name.partition(".")
        path = parquet_dir / f"{table}.parquet" if schema == "curated" else parquet_dir / schema / f"{table}.parquet"
        if _IDENTIFIER.match(name) and schema in ("curated", "ops") and path.exists():
            files[name] = path
    return Mirror(parquet_dir, datetime.fromisoformat(manifest["written_at"]), files)


def open_mirror(mirror: Mirror) -> duckdb.DuckDBPyConnection:
    """An in-memory database whose curated.* and ops.* views read the mirror, sandboxed like the file.

    The files are handed to DuckDB as Arrow datasets, so DuckDB itself opens no path at all: allowing
    the mirror's folder or files instead (allowed_directories / allowed_paths) would also let a query
    write there (measured on 1.5.5: COPY ... TO '<mirror file>' (FORMAT parquet, USE_TMP_FILE false)
    overwrites it)."""
    import pyarrow.dataset as ds

    con = duckdb.connect(":memory:", config=QUERY_SANDBOX)
    for schema in sorted({name.partition(".")[0] for name in mirror.files} | {"curated"}):
        con.execute(f"CREATE SCHEMA {schema}")      # inline by rule (docs/sql.md): the reader's own schemas
    for name, path in sorted(mirror.files.items()):
        hidden = "_mirror_" + name.replace(".", "_")
        con.register(hidden, ds.dataset(str(path), format="parquet"))
        # inline by rule (docs/sql.md): a view over the registered dataset; `name` is a checked identifier
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM {hidden}")
    con.execute("SET lock_configuration = true")   # inline by rule (docs/sql.md): a connection setting
    return con


def open_for_query(db_path: Path, parquet_dir: Path) -> tuple[duckdb.DuckDBPyConnection, str]:
    """The connection for ad-hoc SQL (`caseforge sql`, `quality`, `status`): read-only on the warehouse,
    or, while a run holds the file, an in-memory reader over this warehouse's own Parquet mirror (a note
    on stderr says so and how old it is). Either way sandboxed (QUERY_SANDBOX, locked): nothing outside
    the warehouse and its mirror can be read or written, nothing attached, installed or loaded.
    Returns the connection and "warehouse" or "parquet"."""
    try:
        return connect(db_path, read_only=True, config={**QUERY_SANDBOX, "lock_configuration": True}), "warehouse"
    except WarehouseBusy as busy:
        try:
            mirror = find_mirror(Path(db_path), Path(parquet_dir))
        except ValueError as reason:
            raise WarehouseBusy(f"{busy}; {reason}") from busy
        con = open_mirror(mirror)
        print(mirror.note(Path(db_path)), file=sys.stderr)
        return con, "parquet"


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
