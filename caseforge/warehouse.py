"""The DuckDB warehouse: connection, numbered migrations, staging writes, curated exports."""
from __future__ import annotations

import os
import re
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb
import pandas as pd

from caseforge.config import SQL_DIR

MIGRATIONS_DIR = SQL_DIR / "migrations"
_MIGRATION_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")


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
    con.execute("CREATE SCHEMA IF NOT EXISTS ops")
    con.execute(
        "CREATE TABLE IF NOT EXISTS ops.migrations (number INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
        "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )
    done = {row[0] for row in con.execute("SELECT number FROM ops.migrations").fetchall()}
    applied = []
    for number, path in migration_files():
        if number in done:
            continue
        with transaction(con):
            con.execute(path.read_text(encoding="utf-8"))
            con.execute("INSERT INTO ops.migrations (number, name) VALUES (?, ?)", [number, path.name])
        applied.append(path.name)
    return applied


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """BEGIN … COMMIT, or ROLLBACK and re-raise: all of a write lands, or none of it."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def connect(db_path: str | Path, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open the warehouse; a writable connection is migrated to the latest schema first."""
    db_path = Path(db_path)
    if read_only and not db_path.exists():
        raise FileNotFoundError(f"no warehouse at {db_path}; run an ingest first or pass --db")
    if not read_only:
        db_path.parent.mkdir(parents=True, exist_ok=True)
    with _CONNECT_LOCK:
        try:
            con = duckdb.connect(str(db_path), read_only=read_only)
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


def sql_text(relative: str) -> str:
    """A statement file from sql/ (the only place SQL lives)."""
    path = SQL_DIR / relative
    if not path.exists():
        raise FileNotFoundError(f"missing SQL file {path}")
    return path.read_text(encoding="utf-8")


def run_sql(con: duckdb.DuckDBPyConnection, relative: str, params: dict | list | None = None):
    return con.execute(sql_text(relative), params) if params is not None else con.execute(sql_text(relative))


def replace_staging(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> None:
    """Replace staging.<table> by this batch; the columns must match the staging DDL."""
    con.register("_batch", frame)
    try:
        con.execute(f"DELETE FROM staging.{table}")
        columns = ", ".join(f'"{c}"' for c in frame.columns)
        con.execute(f"INSERT INTO staging.{table} ({columns}) SELECT {columns} FROM _batch")
    finally:
        con.unregister("_batch")


def curated_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'curated' "
        "AND table_type = 'BASE TABLE' ORDER BY table_name"
    ).fetchall()
    return [r[0] for r in rows]


def export_curated_parquet(con: duckdb.DuckDBPyConnection, out_dir: Path) -> list[Path]:
    """Mirror every curated table to Parquet, atomically per file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for table in curated_tables(con):
        final = out_dir / f"{table}.parquet"
        # unique per writer: sources of one nightly run in parallel threads and each mirrors at its end
        tmp = out_dir / f".{table}.{os.getpid()}.{threading.get_ident()}.parquet.tmp"
        con.execute(f"COPY (SELECT * FROM curated.{table}) TO '{tmp.as_posix()}' (FORMAT parquet)")
        tmp.replace(final)
        written.append(final)
    return written


def open_for_query(db_path: Path, parquet_dir: Path) -> tuple[duckdb.DuckDBPyConnection, str]:
    """A read-only connection for ad-hoc SQL; falls back to the Parquet mirror while a run holds the file."""
    try:
        return connect(db_path, read_only=True), "warehouse"
    except WarehouseBusy:
        files = sorted(parquet_dir.glob("*.parquet"))
        if not files:
            raise
        con = duckdb.connect(":memory:")
        con.execute("CREATE SCHEMA curated")
        for path in files:
            con.execute(f"CREATE VIEW curated.{path.stem} AS SELECT * FROM read_parquet('{path.as_posix()}')")
        print(f"note: {db_path} is busy; reading the Parquet mirror in {parquet_dir}", file=sys.stderr)
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
