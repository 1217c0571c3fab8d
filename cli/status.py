"""`caseforge status` (what the last runs did) and `caseforge quality` (the latest gate results)."""
from __future__ import annotations

import argparse
import json
import sys

import duckdb

from caseforge.cli.common import (add_db_option, add_format_option, add_mirror_option, notes_out, open_query,
                                  unknown_value)
from caseforge.cli.rows import jsonable, print_rows, spool_query_answer
from caseforge.open_run_files import unwritten_end
from caseforge.run_record import interrupted_runs, mark_interrupted_runs
from caseforge.settings import EXPECTATIONS_DIR, load_settings
from caseforge.stage_report import known_problems_text
from caseforge.warehouse.connection import connect
from caseforge.warehouse.errors import WarehouseError
from caseforge.warehouse.statements import run_sql, sql_text, table_exists


def register(sub: argparse._SubParsersAction) -> None:
    status = sub.add_parser("status", help="what the last runs did (ops.runs), with the stages of the last nightly")
    status.add_argument("--limit", type=int, default=10)
    status.add_argument("--stages", action="store_true", help="only the stages of the last nightly, one row each")
    add_format_option(status)
    add_db_option(status)
    add_mirror_option(status)
    status.set_defaults(handler=run_status)

    quality = sub.add_parser("quality", help="the latest quality-gate result per table")
    quality.add_argument("table", nargs="?", help="one table (e.g. scotus_cases)")
    add_format_option(quality)
    add_db_option(quality)
    add_mirror_option(quality)
    quality.set_defaults(handler=run_quality)


def _rows(cursor) -> list[dict]:
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


OWNER = ("pid", "host", "process_start")


def status_data(con, limit: int, db_path=None) -> dict:
    """The latest runs (a `running` run whose process is gone shows as `interrupted`, or as the end it could not
    write to the warehouse (a full disk) when its open-run file beside `db_path` keeps one; listed in
    `interrupted_now`; an ended run whose file keeps a later end, as that end) and the stages of the last nightly,
    however many runs came after it."""
    runs = _rows(run_sql(con, "ops/recent_runs.sql", [limit]))
    gone = interrupted_runs([(r["run_id"], *(r[k] for k in OWNER)) for r in runs if r["status"] == "running"])
    for run in runs:
        run["counts"] = json.loads(run["counts"]) if run["counts"] else {}
        if run["run_id"] in gone:
            end = unwritten_end(db_path, run["run_id"])
            run["status"], run["message"] = ((end["status"], end.get("message")) if end else
                                             ("interrupted", f"interrupted: {gone[run['run_id']]}"))
        elif db_path is not None and run["status"] != "running" and \
                (end := unwritten_end(db_path, run["run_id"])) is not None:
            run["status"], run["message"] = end["status"], end.get("message")   # amended after its end: a mirror
            #                                                          the disk had no room for (session.end_and_mirror)
    from caseforge.flows.nightly_plan import KINDS

    last_nightly = run_sql(con, "ops/last_nightly_run.sql").fetchone()[0]      # among the runs shown or not
    stages = []
    if last_nightly is not None:
        stages = _rows(run_sql(con, "ops/nightly_stages.sql", [last_nightly, [*KINDS, "publish"]]))
        for stage in stages:
            stage["counts"] = json.loads(stage["counts"]) if stage["counts"] else {}
    known = []
    if table_exists(con, "ops.loaded_payloads"):
        known = _rows(run_sql(con, "ops/known_problems.sql"))
    return {"runs": runs, "last_nightly_stages": stages, "interrupted_now": sorted(gone), "known_problems": known}


def known_problem_lines(known: list[dict]) -> list[str]:
    """'cn: known problems: 1 record in 1 payload, since run 3' per source with quarantined records in payloads
    that are recorded as loaded (not parsed again until they change, --reparse, a new parser or suite)."""
    return [f"{row['source']}: {known_problems_text(int(row['records']), int(row['payloads']), row['since'])}"
            for row in known]


def _record_interrupted(db_path) -> None:
    """Write down what status found: runs whose process is gone become `interrupted` in ops.runs too.
    Best effort: when a run holds the file (or it cannot be written) the next run's start does it."""
    try:
        con = connect(db_path, busy_wait_s=0)
    except (WarehouseError, duckdb.Error, OSError):
        return
    try:
        mark_interrupted_runs(con)
    finally:
        con.close()


# the fields of a run and of a nightly stage as csv and json give them (sql/ops/recent_runs.sql, nightly_stages.sql),
# and the ones a table shows
RUN_FIELDS = ["run_id", "kind", "target", "status", "started_at", "finished_at", "duration_s", "counts", "message",
              "stages_failed", "stages_skipped", "pid", "host", "process_start"]
RUN_COLUMNS = ["run_id", "kind", "target", "status", "started_at", "duration_s", "stages_failed", "counts", "message"]
STAGE_FIELDS = ["stage", "name", "status", "counts", "duration_s", "message"]
STAGE_COLUMNS = ["stage", "name", "status", "duration_s", "counts", "message"]


def run_status(args: argparse.Namespace) -> int:
    settings = load_settings(args.db)
    con, mode = open_query(args, settings)
    try:
        data = status_data(con, args.limit, settings.db_path if mode != "published" else None)
    finally:
        con.close()
    if mode == "warehouse" and data["interrupted_now"]:
        _record_interrupted(settings.db_path)
    fmt = args.format
    if args.stages:
        stages = data["last_nightly_stages"]
        if not stages:
            print("no nightly has run on this warehouse", file=notes_out(fmt))
        columns = STAGE_COLUMNS if fmt == "table" else STAGE_FIELDS
        print_rows(columns, [[s[c] for c in columns] for s in stages], fmt)
        return 0
    if fmt == "json":
        json.dump(data, sys.stdout, default=jsonable, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if fmt == "csv":
        print_rows(RUN_FIELDS, [[r[c] for c in RUN_FIELDS] for r in data["runs"]], "csv")
        return 0
    if not data["runs"]:
        print("no runs recorded yet")
        return 0
    print_rows(RUN_COLUMNS, [[r[c] for c in RUN_COLUMNS] for r in data["runs"]], "table")
    if data["known_problems"]:
        print("\n" + "\n".join(known_problem_lines(data["known_problems"])))
    if data["last_nightly_stages"]:
        print("\nlast nightly, per stage:")
        print_rows(STAGE_COLUMNS, [[s[c] for c in STAGE_COLUMNS] for s in data["last_nightly_stages"]], "table")
    return 0


def _gated_table(con, name: str) -> str:
    """The table `quality TABLE` means (`curated.` may be written or not); a table no quality gate checks is a
    typo: exit 2 with the closest name."""
    known = {path.stem for path in EXPECTATIONS_DIR.glob("*.json")}
    known |= {row[0] for row in run_sql(con, "ops/quality_tables.sql").fetchall()}
    table = name.removeprefix("curated.")
    if table not in known:
        raise unknown_value("table", name, known)
    return table


def run_quality(args: argparse.Namespace) -> int:
    settings = load_settings(args.db)
    con, _ = open_query(args, settings)
    try:
        table = _gated_table(con, args.table) if args.table else None
        cursor = con.execute(sql_text("ops/latest_quality.sql"), [table, table])
        columns = [d[0] for d in cursor.description]
        success, failed = columns.index("success"), columns.index("failed_expectations")
        failing = []

        def nested(batch: list[tuple]) -> list[list]:
            # failed_expectations is JSON text in the warehouse: in the answer, the array it holds
            rows = [list(row) for row in batch]
            for row in rows:
                if isinstance(row[failed], str):
                    row[failed] = json.loads(row[failed])
                if not row[success]:
                    failing.append(row[0])
            return rows

        answer = spool_query_answer(con, cursor, args.format, nested)
    finally:
        con.close()
    answer.print_to()
    return 1 if failing else 0
