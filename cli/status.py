"""`caseforge status` (what the last runs did) and `caseforge quality` (the latest gate results)."""
from __future__ import annotations

import argparse
import json
import sys

import duckdb

from caseforge.cli.common import add_db_option, jsonable, print_rows
from caseforge.config import settings as load_settings
from caseforge.runs import interrupted_runs, mark_interrupted_runs, unwritten_end
from caseforge.warehouse import WarehouseBusy, connect, open_for_query, run_sql, sql_text


def register(sub: argparse._SubParsersAction) -> None:
    status = sub.add_parser("status", help="what the last runs did (ops.runs), with the stages of the last nightly")
    status.add_argument("--limit", type=int, default=10)
    status.add_argument("--format", choices=["table", "json"], default="table")
    add_db_option(status)
    status.set_defaults(handler=run_status)

    quality = sub.add_parser("quality", help="the latest quality-gate result per table")
    quality.add_argument("table", nargs="?", help="one table (e.g. scotus_cases)")
    quality.add_argument("--format", choices=["table", "csv", "json"], default="table")
    add_db_option(quality)
    quality.set_defaults(handler=run_quality)


def _rows(cursor) -> list[dict]:
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


OWNER = ("pid", "host", "process_start")


def status_data(con, limit: int, db_path=None) -> dict:
    """The latest runs (a `running` run whose process is gone shows as `interrupted`, or as the end it could not
    write to the warehouse (a full disk) when its open-run file beside `db_path` keeps one; listed in
    `interrupted_now`) and the stages of the last nightly among them."""
    runs = _rows(run_sql(con, "ops/recent_runs.sql", [limit]))
    gone = interrupted_runs([(r["run_id"], *(r[k] for k in OWNER)) for r in runs if r["status"] == "running"])
    for run in runs:
        run["counts"] = json.loads(run["counts"]) if run["counts"] else {}
        if run["run_id"] in gone:
            end = unwritten_end(db_path, run["run_id"])
            run["status"], run["message"] = ((end["status"], end.get("message")) if end else
                                             ("interrupted", f"interrupted: {gone[run['run_id']]}"))
    last_nightly = next((r for r in runs if r["kind"] == "nightly"), None)
    stages = []
    if last_nightly:
        stages = _rows(run_sql(con, "ops/nightly_stages.sql", [last_nightly["run_id"]]))
        for stage in stages:
            stage["counts"] = json.loads(stage["counts"]) if stage["counts"] else {}
    return {"runs": runs, "last_nightly_stages": stages, "interrupted_now": sorted(gone)}


def _record_interrupted(db_path) -> None:
    """Write down what status found: runs whose process is gone become `interrupted` in ops.runs too.
    Best effort: when a run holds the file (or it cannot be written) the next run's start does it."""
    try:
        con = connect(db_path)
    except (WarehouseBusy, duckdb.Error, OSError):
        return
    try:
        mark_interrupted_runs(con)
    finally:
        con.close()


def run_status(args: argparse.Namespace) -> int:
    settings = load_settings(args.db)
    con, mode = open_for_query(settings.db_path, settings.parquet_dir)
    try:
        data = status_data(con, args.limit, settings.db_path)
    finally:
        con.close()
    if mode == "warehouse" and data["interrupted_now"]:
        _record_interrupted(settings.db_path)
    if args.format == "json":
        json.dump(data, sys.stdout, default=jsonable, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if not data["runs"]:
        print("no runs recorded yet")
        return 0
    columns = ["run_id", "kind", "target", "status", "started_at", "duration_s", "stages_failed", "counts", "message"]
    print_rows(columns, [[r[c] if c != "counts" else ", ".join(f"{k}={v}" for k, v in sorted(r["counts"].items()))
                          for c in columns] for r in data["runs"]], "table")
    if data["last_nightly_stages"]:
        print("\nlast nightly, per stage:")
        columns = ["stage", "name", "status", "duration_s", "counts", "message"]
        print_rows(columns, [[s[c] if c != "counts" else ", ".join(f"{k}={v}" for k, v in sorted(s["counts"].items()))
                              for c in columns] for s in data["last_nightly_stages"]], "table")
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
