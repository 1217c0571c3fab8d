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


def sql_text(relative: str, **identifiers: str) -> str:
    """A statement file from sql/ (where SQL lives: docs/sql.md).

    `{name}` placeholders are filled from `identifiers`, which must be table or column names (checked);
    values are never written into the text, they are bound as parameters.
    """
    path = SQL_DIR / relative
    if not path.exists():
        raise FileNotFoundError(f"missing SQL file {path}")
    text = path.read_text(encoding="utf-8")
    if not identifiers:
        return text
    for name, value in identifiers.items():
        if not isinstance(value, str) or not _IDENTIFIER.match(value):
            raise ValueError(f"{relative}: {{{name}}} must be an identifier, not {value!r}")

    def fill(match: re.Match) -> str:
        if match.group(1) not in identifiers:
            raise KeyError(f"{relative}: no value for {{{match.group(1)}}}")
        return identifiers[match.group(1)]

    return _PLACEHOLDER.sub(fill, text)


def run_sql(con: duckdb.DuckDBPyConnection, relative: str, params: dict | list | None = None,
            identifiers: dict[str, str] | None = None):
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


def export_curated_parquet(con: duckdb.DuckDBPyConnection, out_dir: Path) -> list[Path]:
    """Mirror every curated table (and nothing else) to Parquet, atomically per file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    tables = curated_tables(con)
    # A table that left curated (e.g. a CaseFacts stage table, now in build) leaves the mirror too.
    for stale in sorted(out_dir.glob("*.parquet")):
        if stale.stem not in tables:
            stale.unlink(missing_ok=True)
    for table in tables:
        final = out_dir / f"{table}.parquet"
        # unique per writer: sources of one nightly run in parallel threads and each mirrors at its end
        tmp = out_dir / f".{table}.{os.getpid()}.{threading.get_ident()}.parquet.tmp"
        run_sql(con, "ops/mirror_table_to_parquet.sql", {"path": tmp.as_posix()}, identifiers={"table": table})
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
        # inline by rule (docs/sql.md): DuckDB cannot prepare CREATE VIEW, so the path is written in
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
