"""What every command shares: the --db option, running a flow and reporting on it, printing rows."""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import decimal
import inspect
import json
import sys

from caseforge.errors import CommandFailed

__all__ = ["CommandFailed", "add_db_option", "add_retry_failed_option", "flow_arguments", "jsonable", "print_rows", "run_flow"]

MAX_REASONS_PRINTED = 50


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="DuckDB file (default: $CASEFORGE_DB or data/caseforge.duckdb)")


def add_retry_failed_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--retry-failed", dest="retry_failed", action="store_true",
                        help="ask again, once, every LLM request whose cached answer is a failure "
                             "(default: the settings' [llm] retry_failed)")


def flow_arguments(flow, args: argparse.Namespace) -> dict:
    """The flow's parameters that the command line sets (options are named after the parameters)."""
    names = inspect.signature(flow.fn).parameters
    return {name: getattr(args, name) for name in names if hasattr(args, name)}


def run_flow(flow, **kwargs) -> dict:
    """Run `flow` locally; print its counters; return its report. CommandFailed (one line per problem)
    when it failed, quarantined data or crashed."""
    from caseforge.flows.common import FlowCrashed, report_of

    state = flow(**kwargs, return_state=True)
    sys.stdout.flush()
    try:
        report = report_of(state)
    except FlowCrashed as exc:
        raise CommandFailed([f"{flow.name} crashed: {exc}"]) from exc
    counts = ", ".join(f"{k}={v}" for k, v in sorted(report["counts"].items()))
    print(f"{report['name']} (run {report['run_id']}): {counts}")
    if not state.is_completed():
        reasons = report["failures"] or [state.message or "failed"]
        if len(reasons) > MAX_REASONS_PRINTED:
            extra = len(reasons) - MAX_REASONS_PRINTED
            reasons = reasons[:MAX_REASONS_PRINTED] + [f"…and {extra} more (see `caseforge sql` on ops.quarantine)"]
        report["problems"] = reasons
    return report


def finish(report: dict) -> int:
    """Exit status of a command whose flow report `run_flow` returned."""
    if report.get("problems"):
        raise CommandFailed(report["problems"])
    return 0


def jsonable(value):
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
        json.dump([{c: jsonable(v) for c, v in zip(columns, row)} for row in rows], out,
                  ensure_ascii=False, default=str, indent=1)
        out.write("\n")
    elif fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(columns)
        writer.writerows([[jsonable(v) for v in row] for row in rows])
    else:
        cells = [[("NULL" if v is None else str(jsonable(v))).replace("\n", " ") for v in row] for row in rows]
        cells = [[c if len(c) <= 80 else c[:77] + "..." for c in row] for row in cells]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
        out.write(" | ".join(c.ljust(w) for c, w in zip(columns, widths)) + "\n")
        out.write("-+-".join("-" * w for w in widths) + "\n")
        for row in cells:
            out.write(" | ".join(c.ljust(w) for c, w in zip(row, widths)) + "\n")
        out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")
