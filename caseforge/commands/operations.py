"""`caseforge run nightly` (the full refresh as one Prefect flow) and `caseforge status` (recent runs)."""
from __future__ import annotations

import argparse
import json
import sys

from caseforge.cli import CommandFailed, add_db_option
from caseforge.config import settings as load_settings
from caseforge.warehouse import open_warehouse, run_sql


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="run an operations flow (nightly)")
    run.add_argument("flow", choices=["nightly"])
    run.add_argument("--from-samples", action="store_true",
                     help="replay every source from its folder under CASEFORGE_SAMPLES instead of the network")
    run.add_argument("--samples", help="samples folder (default: $CASEFORGE_SAMPLES or ../shared/samples)")
    run.add_argument("--release-dir", help="where releases are written (default: next to the DB, releases/)")
    run.add_argument("--sources", help="comma-separated subset of the sources (default: all)")
    run.add_argument("--force", action="store_true", help="run builders and exports even when inputs are unchanged")
    add_db_option(run)
    run.set_defaults(handler=run_nightly_command)

    status = sub.add_parser("status", help="what the last runs did (ops.runs), with the stages of the last nightly")
    status.add_argument("--limit", type=int, default=10)
    status.add_argument("--format", choices=["table", "json"], default="table")
    add_db_option(status)
    status.set_defaults(handler=run_status)


def run_nightly_command(args: argparse.Namespace) -> int:
    from caseforge.flows.nightly import nightly_refresh

    sources = [s.strip() for s in args.sources.split(",") if s.strip()] if args.sources else None
    state = nightly_refresh(db=args.db, from_samples=args.from_samples, samples_dir=args.samples,
                            release_dir=args.release_dir, sources=sources, force=args.force, return_state=True)
    sys.stdout.flush()
    data = state.result(raise_on_failure=False)
    if isinstance(data, BaseException) or not isinstance(data, dict):
        raise CommandFailed([f"nightly flow crashed: {data}"])
    for row in data["stages"]:
        print(f"{row['stage']:8} {row['name']:14} {row['status']:11} fetched={row['fetched']} "
              f"new_payloads={row['new_payloads']} new={row['new']} changed={row['changed']} "
              f"quarantined={row['quarantined']} llm_calls={row['llm_calls']} {row['note']}")
    print(f"summary: {data['run_dir']}/summary.md")
    if state.is_completed():
        return 0
    raise CommandFailed(data["failures"] or [state.message or "nightly failed"])


def _rows(cursor) -> list[dict]:
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def status_data(con, limit: int) -> dict:
    runs = _rows(run_sql(con, "ops/recent_runs.sql", [limit]))
    for run in runs:
        run["counts"] = json.loads(run["counts"]) if run["counts"] else {}
    last_nightly = next((r for r in runs if r["kind"] == "nightly"), None)
    stages = []
    if last_nightly:
        stages = _rows(run_sql(con, "ops/nightly_stages.sql", [last_nightly["run_id"]]))
        for stage in stages:
            stage["counts"] = json.loads(stage["counts"]) if stage["counts"] else {}
    return {"runs": runs, "last_nightly_stages": stages}


def run_status(args: argparse.Namespace) -> int:
    from caseforge.commands.query import _jsonable, print_rows

    settings = load_settings(args.db)
    with open_warehouse(settings.db_path, read_only=True) as con:
        data = status_data(con, args.limit)
    if args.format == "json":
        json.dump(data, sys.stdout, default=_jsonable, indent=1, ensure_ascii=False)
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
