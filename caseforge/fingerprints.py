"""Input fingerprints: whether a builder's or a release's input tables changed since its last success (recorded
in ops.input_fingerprints). A curated table's is read from the write journal (caseforge.warehouse.changes: how
many changes it had and the last one), its columns, the migrations applied, its row count and DuckDB's storage
facts of it, whatever its size: no row is read. A table whose writes are not journaled gets its row count and an
order-independent hash of every row. docs/scaling.md says why a changed table cannot look unchanged."""
from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone

import duckdb

from caseforge.warehouse.statements import run_sql, sql_text
from caseforge.warehouse.table_state import journal_state, journal_states

_TABLE_NAME = re.compile(r"^([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)$")


def value_fingerprint(value) -> str:
    """A stable digest of a value (a table's fingerprint, settings): key order does not matter."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def checked_table_name(table: str) -> str:
    """`schema.table` as given, after checking it is nothing else (it is formatted into SQL)."""
    if not _TABLE_NAME.match(table):
        raise ValueError(f"input table must look like schema.table: {table!r}")
    return table


def table_fingerprint(con: duckdb.DuckDBPyConnection, table: str) -> dict:
    """A journaled table's state (caseforge.warehouse.table_state); any other's row count and content hash."""
    name = checked_table_name(table)
    state = journal_state(con, name)
    if state is not None:
        return state
    rows, content_hash = con.execute(sql_text("ops/table_fingerprint.sql").format(table=name)).fetchone()
    return {"rows": int(rows), "hash": content_hash}


def inputs_fingerprint(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...]) -> tuple[str, dict]:
    states = journal_states(con, [checked_table_name(t) for t in tables])
    per_table = {t: states.get(t) or table_fingerprint(con, t) for t in sorted(tables)}
    digest = hashlib.sha256(json.dumps(per_table, sort_keys=True).encode()).hexdigest()
    return digest, per_table


def last_fingerprint(con: duckdb.DuckDBPyConnection, stage: str, name: str) -> str | None:
    row = run_sql(con, "ops/last_fingerprint.sql", [stage, name]).fetchone()
    return row[0] if row else None


def record_fingerprint(con, stage: str, name: str, fingerprint: str, per_table: dict, run_id: int) -> None:
    run_sql(con, "ops/record_fingerprint.sql",
            [stage, name, fingerprint, json.dumps(per_table), run_id, datetime.now(timezone.utc)])
