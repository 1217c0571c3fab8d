"""`caseforge sql`: read-only ad-hoc SQL on the warehouse (or its Parquet mirror while a run holds it)."""
from __future__ import annotations

import argparse

from caseforge.cli.common import add_db_option, print_rows
from caseforge.config import settings as load_settings
from caseforge.warehouse import open_for_query


def register(sub: argparse._SubParsersAction) -> None:
    sql = sub.add_parser("sql", help="run read-only SQL against the warehouse")
    sql.add_argument("query", help='e.g. "SELECT name, decided_date FROM curated.scotus_cases LIMIT 5"')
    sql.add_argument("--format", choices=["table", "csv", "json"], default="table")
    add_db_option(sql)
    sql.set_defaults(handler=run_sql_command)


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
