"""`caseforge sql` (read-only ad-hoc SQL) and `caseforge quality` (latest gate results)."""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import decimal
import json
import sys

from caseforge.cli import add_db_option
from caseforge.config import settings as load_settings
from caseforge.warehouse import open_for_query, sql_text


def register(sub: argparse._SubParsersAction) -> None:
    sql = sub.add_parser("sql", help="run read-only SQL against the warehouse")
    sql.add_argument("query", help='e.g. "SELECT name, decided_date FROM curated.scotus_cases LIMIT 5"')
    sql.add_argument("--format", choices=["table", "csv", "json"], default="table")
    add_db_option(sql)
    sql.set_defaults(handler=run_sql_command)

    quality = sub.add_parser("quality", help="the latest quality-gate result per table")
    quality.add_argument("table", nargs="?", help="one table (e.g. scotus_cases)")
    quality.add_argument("--format", choices=["table", "csv", "json"], default="table")
    add_db_option(quality)
    quality.set_defaults(handler=run_quality)


def _jsonable(value):
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    return value


def print_rows(columns: list[str], rows: list[tuple], fmt: str, out=None) -> None:
    out = out or sys.stdout
    if fmt == "json":
        json.dump([{c: _jsonable(v) for c, v in zip(columns, row)} for row in rows], out,
                  ensure_ascii=False, default=str, indent=1)
        out.write("\n")
    elif fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(columns)
        writer.writerows([[_jsonable(v) for v in row] for row in rows])
    else:
        cells = [[("NULL" if v is None else str(_jsonable(v))).replace("\n", " ") for v in row] for row in rows]
        cells = [[c if len(c) <= 80 else c[:77] + "..." for c in row] for row in cells]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
        out.write(" | ".join(c.ljust(w) for c, w in zip(columns, widths)) + "\n")
        out.write("-+-".join("-" * w for w in widths) + "\n")
        for row in cells:
            out.write(" | ".join(c.ljust(w) for c, w in zip(row, widths)) + "\n")
        out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")


def run_sql_command(args: argparse.Namespace) -> int:
    settings = load_settings(args.db)
    con, _ = open_for_query(settings.db_path, settings.parquet_dir)
    try:
        cursor = con.execute(args.query)
        if cursor.description is None:
            return 0
        columns = [d[0] for d in cursor.description]
        print_rows(columns, cursor.fetchall(), args.format)
    finally:
        con.close()
    return 0


def run_quality(args: argparse.Namespace) -> int:
    settings = load_settings(args.db)
    con, _ = open_for_query(settings.db_path, settings.parquet_dir)
    try:
        cursor = con.execute(sql_text("ops/latest_quality.sql"), [args.table, args.table])
        columns = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
    finally:
        con.close()
    print_rows(columns, rows, args.format)
    failing = [r for r in rows if not r[columns.index("success")]]
    return 1 if failing else 0
