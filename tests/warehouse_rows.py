"""Rows of a query on a warehouse file, read-only, the connection closed again (tests read what a run wrote)."""
from __future__ import annotations

import duckdb


def rows(db_path, sql: str, params=None) -> list[tuple]:
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()
