"""The warehouse's numbered migrations (sql/migrations/NNN_name.sql): applied in order when a writer connects,
each recorded in ops.migrations; a warehouse that names one this caseforge does not have is refused."""
from __future__ import annotations

import re
from pathlib import Path

import duckdb

from caseforge.settings import SQL_DIR
from caseforge.warehouse.errors import WarehouseTooNew
from caseforge.warehouse.statements import run_sql, table_exists, transaction

MIGRATIONS_DIR = SQL_DIR / "migrations"
_MIGRATION_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")


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

