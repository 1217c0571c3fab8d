"""Batch writes: a stage's rows go in one statement that reads them as the relation _rows."""
from __future__ import annotations

import duckdb
import pandas as pd

from caseforge.warehouse import run_sql


def upsert_rows(con: duckdb.DuckDBPyConnection, statement: str, rows: list[dict]) -> None:
    """Run sql/<statement> over `rows` (all or nothing); much faster than one statement per row."""
    if not rows:
        return
    con.register("_rows", pd.DataFrame(rows))
    try:
        run_sql(con, statement)
    finally:
        con.unregister("_rows")
