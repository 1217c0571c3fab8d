"""`caseforge sql`: read-only ad-hoc SQL on the warehouse (or its Parquet mirror while a run holds it),
one statement per call, on caseforge.warehouse.query.open_for_query's sandboxed connection."""
from __future__ import annotations

import argparse
import dataclasses

import duckdb

from caseforge.cli.common import (CommandError, add_db_option, add_format_option, add_mirror_option, one_line,
                                  open_query)
from caseforge.cli.rows import spool_query_answer
from caseforge.settings import load_settings
from caseforge.warehouse.mirror import MIRRORED_OPS_TABLES
from caseforge.warehouse.query import QueryBounds


def register(sub: argparse._SubParsersAction) -> None:
    sql = sub.add_parser("sql", help="run one read-only SQL statement against the warehouse")
    sql.add_argument("query", help='e.g. "SELECT name, decided_date FROM curated.scotus_cases LIMIT 5"')
    add_format_option(sql)
    sql.add_argument("--timeout", type=float, metavar="S",
                     help="stop the statement after S seconds (default: $CASEFORGE_QUERY_TIMEOUT_S or 60; 0: never)")
    add_db_option(sql)
    add_mirror_option(sql)
    sql.set_defaults(handler=run_sql_command)


def run_sql_command(args: argparse.Namespace) -> int:
    settings = load_settings(args.db)
    bounds = QueryBounds.of(settings)
    if args.timeout is not None:
        if args.timeout < 0:
            raise CommandError([f"--timeout must be 0 (no limit) or more seconds, not {args.timeout:g}"])
        bounds = dataclasses.replace(bounds, timeout_s=args.timeout)
    con, mode = open_query(args, settings, bounds)
    try:
        # DuckDB's own parser counts the statements: several in one call run none (which result would
        # be shown, and which of the others ran, is not something a reader should have to guess)
        statements = con.extract_statements(args.query)
        if not statements:
            raise CommandError(["empty query: give one SQL statement, e.g. "
                                 "\"SELECT name FROM curated.scotus_cases LIMIT 5\""])
        if len(statements) > 1:
            raise CommandError([f"{len(statements)} statements in one call, none run: `caseforge sql` runs "
                                 "one statement per call, so the result shown is never in doubt"])
        try:
            cursor = con.execute(args.query)
        except duckdb.CatalogException as exc:
            if mode not in ("parquet", "published"):
                raise
            ops = ", ".join(f"ops.{t}" for t in MIRRORED_OPS_TABLES)
            if mode == "published":
                raise CommandError([f"{one_line(exc)} (not in the published mirror {args.mirror}: it has "
                                     f"curated.* and {ops})"]) from exc
            raise CommandError([f"{one_line(exc)} (not in the Parquet mirror, which answers while a run holds "
                                 f"{settings.db_path}: it has curated.* and {ops}; ask again when the run is "
                                 "over)"]) from exc
        if cursor.description is None:
            return 0
        answer = spool_query_answer(con, cursor, args.format)
    finally:
        con.close()             # before printing: a slow reader of the output must not hold the file
    answer.print_to()
    return 0
