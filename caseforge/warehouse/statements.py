"""Running the statement files of sql/ (where SQL lives: docs/sql.md) on a warehouse connection: a statement's
text with its names filled in, run with bound values, over a batch of rows, in a transaction; and the few
questions every stage asks (does a table exist, which file is this connection's database)."""
from __future__ import annotations

import re
from contextlib import contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import duckdb

from caseforge.settings import SQL_DIR
from caseforge.warehouse import changes

if TYPE_CHECKING:      # pandas costs a command about 0.3 s to import: only where rows are written
    import pandas as pd

# What may be written into a statement's text: a plain or schema-qualified name, never a value.
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


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
        if not all(isinstance(v, str) and IDENTIFIER.match(v) for v in names):
            raise ValueError(f"{relative}: {{{name}}} must be an identifier, not {value!r}")

    def fill(match: re.Match) -> str:
        if match.group(1) not in identifiers:
            raise KeyError(f"{relative}: no value for {{{match.group(1)}}}")
        value = identifiers[match.group(1)]
        return ", ".join(value) if isinstance(value, tuple) else value

    return _PLACEHOLDER.sub(fill, text)


def run_sql(con: duckdb.DuckDBPyConnection, relative: str, params: dict | list | None = None,
            identifiers: dict[str, str | tuple[str, ...]] | None = None):
    """Run sql/<relative> (its `{name}`s filled from `identifiers`, `params` bound to its last statement). A file
    that changes rows of a curated table is run statement by statement in one transaction and recorded in the
    write journal (caseforge.warehouse.changes); its last statement's answer comes back fetched."""
    statement = sql_text(relative, **(identifiers or {}))
    if changes.mentions_journaled(statement):
        fetched = _run_journaled(con, relative, statement, params)
        if fetched is not None:
            return fetched
    return con.execute(statement, params) if params is not None else con.execute(statement)


def _run_journaled(con: duckdb.DuckDBPyConnection, relative: str, text: str, params) -> changes.FetchedResult | None:
    """Run `text` (the statement file `relative`) statement by statement, recording each curated table it changed
    in the write journal, all in one transaction (the caller's, or one of its own); None when it writes no
    curated table (the caller runs it as it is)."""
    statements = con.extract_statements(text)
    targets = [changes.written_tables(s) for s in statements]
    if not any(targets):
        return None
    changed: dict[str, int | None] = {}
    with (nullcontext() if changes.in_transaction(con) else transaction(con)):
        result = changes.FetchedResult([], None)
        for index, (statement, tables) in enumerate(zip(statements, targets)):
            last = index == len(statements) - 1
            cursor = con.execute(statement, params) if last and params is not None else con.execute(statement)
            result = changes.FetchedResult(cursor.fetchall() if cursor.description else [], cursor.description)
            count = changes.changed_rows(statement, result.rows) if tables else 0
            for table in tables:
                known = changed.get(table, 0)
                changed[table] = None if count is None or known is None else known + count
        changed = {table: rows for table, rows in changed.items() if rows is None or rows > 0}
        if changed and table_exists(con, changes.JOURNAL_TABLE):
            now = datetime.now(timezone.utc)
            for table, rows in sorted(changed.items()):
                run_sql(con, "ops/record_table_change.sql", [table, relative, rows, now])
    return result


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
    import pandas as pd

    con.register("_rows", pd.DataFrame(rows))
    try:
        run_sql(con, relative)
    finally:
        con.unregister("_rows")


def database_file(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The file of the database `con` is connected to (None: an in-memory database). The one place this is asked."""
    database = run_sql(con, "ops/database_path.sql").fetchone()[0]
    return Path(database) if database and database != ":memory:" else None


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """BEGIN … COMMIT, or ROLLBACK and re-raise: all of a write lands, or none of it.

    The one place transaction control is written inline (docs/sql.md)."""
    con.execute("BEGIN TRANSACTION")
    changes.entered_transaction(con)
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        changes.left_transaction(con)
    con.execute("COMMIT")

