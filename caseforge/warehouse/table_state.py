"""What a curated table's state is without reading its rows: its row count, the write journal's count of its changes
and the last one (caseforge.warehouse.changes), its columns and the migrations applied, and DuckDB's storage facts
of it (the rows ever appended, each column segment's block, offset, rows and pending updates). Two states are equal
only if no change to the table committed between them (docs/scaling.md, "Fingerprints that follow change"): input
fingerprints (caseforge.fingerprints) and the Parquet mirror (a table unchanged since its last generation is not
read again) rely on it. The catalog is asked once for every table asked about."""
from __future__ import annotations

import hashlib

import duckdb

from caseforge.warehouse.changes import JOURNAL_TABLE, journaled
from caseforge.warehouse.statements import run_sql, table_exists


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def journal_states(con: duckdb.DuckDBPyConnection, tables) -> dict[str, dict]:
    """The state of each journaled table of `tables` (checked `schema.table` names) that exists; the others, and
    every table where there is no journal yet, are left out."""
    wanted = [t for t in tables if journaled(t)]
    if not wanted or not table_exists(con, JOURNAL_TABLE):
        return {}
    journal = {name: (int(n), last) for name, n, last in run_sql(con, "ops/journal_counts.sql").fetchall()}
    migrations = ",".join(str(n) for (n,) in sorted(run_sql(con, "ops/applied_migrations.sql").fetchall()))
    shapes = {}
    for schema in sorted({t.partition(".")[0] for t in wanted}):
        shapes.update({name: (appended, columns) for name, appended, columns in
                       run_sql(con, "ops/table_shapes.sql", {"schema": schema}).fetchall()})
    states = {}
    for table in wanted:
        if table not in shapes:
            continue
        appended, columns = shapes[table]
        rows, storage = run_sql(con, "ops/table_storage.sql", {"name": table}, identifiers={"table": table}).fetchone()
        changes, last = journal.get(table, (0, None))
        states[table] = {"rows": int(rows), "changes": changes, "last_change": last,
                         "columns": _digest(f"{columns}|{migrations}"), "storage": _digest(f"{appended}/{storage}")}
    return states


def journal_state(con: duckdb.DuckDBPyConnection, table: str) -> dict | None:
    """The state of one table, or None when its writes are not journaled here (or it does not exist)."""
    return journal_states(con, [table]).get(table)
