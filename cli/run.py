"""`caseforge run nightly`: the full refresh (every source, changed builders, releases) as one Prefect flow;
`--plan`: what it would run and why, without running anything."""
from __future__ import annotations

import argparse
import sys

from caseforge.cli.common import (CommandFailed, add_db_option, add_llm_cache_options, flow_report, flows_session,
                                  unknown_value)
from caseforge.cli.rows import print_rows
from caseforge.flows import registry


# The stage table on the terminal (summary.md has every column)
STAGE_COLUMNS = ["stage", "name", "status", "fetched", "new_payloads", "new", "changed", "quarantined", "llm_calls",
                 "problems", "note"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("run", help="run an operations flow (nightly)")
    flows = parser.add_subparsers(dest="flow", required=True, metavar="FLOW")
    nightly = flows.add_parser("nightly", help="every source, then the builders and releases whose inputs changed")
    nightly.add_argument("--from-samples", action="store_true",
                         help="replay every source from its folder under CASEFORGE_SAMPLES instead of the network")
    nightly.add_argument("--samples", help="samples folder (default: $CASEFORGE_SAMPLES or ../shared/samples); "
                                                "with --from-samples it must exist")
    nightly.add_argument("--release-dir", help="where releases are written (default: <db dir>/<db name>-releases/)")
    nightly.add_argument("--sources", help="comma-separated subset of the sources (default: all)")
    nightly.add_argument("--force", action="store_true", help="run builders and exports even when inputs are unchanged")
    nightly.add_argument("--reparse", action="store_true",
                         help="every source parses all its files again, also those its parser version already loaded")
    nightly.add_argument("--plan", action="store_true",
                         help="print what the nightly would run and why (what changed since each stage's last "
                              "success), without running anything or writing to the warehouse")
    add_db_option(nightly)
    add_llm_cache_options(nightly)
    nightly.set_defaults(handler=run_nightly_command)


def run_nightly_command(args: argparse.Namespace) -> int:
    from caseforge.flows.nightly import nightly_refresh
    from caseforge.flows.nightly_report import MAX_PROBLEMS_LISTED, NOTHING_REBUILT, PROBLEM_COLUMNS, problems_once

    sources = [s.strip() for s in args.sources.split(",") if s.strip()] if args.sources else None
    for name in sources or ():
        if name not in registry.SOURCES:
            raise unknown_value("source", name, registry.SOURCES)
    if args.plan:
        return print_plan(args, sources)
    with flows_session():
        state = nightly_refresh(db=args.db, from_samples=args.from_samples, samples_dir=args.samples,
                                release_dir=args.release_dir, sources=sources, force=args.force,
                                reparse=args.reparse, return_state=True)
    sys.stdout.flush()
    data = flow_report("nightly flow", state)
    print()
    print_rows(STAGE_COLUMNS, [[row.get(c) for c in STAGE_COLUMNS] for row in data["stages"]], "table")
    if not data["rebuilt"]:
        print(NOTHING_REBUILT)
    cost = {k: sum(row.get(k) or 0 for row in data["stages"])
            for k in ("prompt_tokens", "completion_tokens", "model_s")}
    if any(cost.values()):
        print(f"LLM calls tonight: {cost['prompt_tokens']:,} prompt + {cost['completion_tokens']:,} completion tokens, "
              f"{cost['model_s']:,.1f} model-seconds (per step and model: caseforge llm stats --run {data['run_id']})")
    problems = data.get("problems") or []
    if problems:
        print(f"\nProblems ({len(data['failures'])}; each rule a record broke, beside the value that broke it):")
        print_rows(PROBLEM_COLUMNS, problems_once(problems), "table")
        if len(data["failures"]) > MAX_PROBLEMS_LISTED:
            print(f"…and {len(data['failures']) - MAX_PROBLEMS_LISTED} more problems, not listed here "
                  "(`caseforge sql` on ops.quarantine)")
    print(f"summary: {data['run_dir']}/summary.md")
    if state.is_completed():
        return 0
    if not problems:               # no list above: the reasons themselves
        raise CommandFailed(data["failures"] or [state.message or "nightly failed"])
    failed = [f"{row['stage']} {row['name']}" for row in data["stages"] if row["status"] in ("failed", "quarantined")]
    raise CommandFailed([f"nightly {data['run_id']}: {len(failed)} stage(s) failed ({', '.join(failed)}), "
                         f"{len(data['failures'])} problem(s), listed above"])


def print_plan(args: argparse.Namespace, sources: list[str] | None) -> int:
    """`run nightly --plan`: every stage of the next nightly with these options, `run`, `maybe` or `skip`, and
    why; read-only (no run record, no Prefect, nothing written)."""
    from pathlib import Path

    from caseforge.flows.nightly_forecast import COLUMNS, MAYBE, forecast, would_rebuild
    from caseforge.flows.nightly_plan import NightlyOptions, release_location
    from caseforge.settings import load_settings

    settings = load_settings(args.db)
    options = NightlyOptions(from_samples=args.from_samples, samples_dir=Path(args.samples) if args.samples else None,
                             release_dir=release_location(args.release_dir), sources=sources, force=args.force,
                             reparse=args.reparse)
    foreseen = forecast(settings, options)
    print(f"the next nightly on {settings.db_path}: nothing was run, nothing written")
    print_rows(COLUMNS, [[f.kind, f.name, f.would, f.why] for f in foreseen], "table")
    rebuilt = would_rebuild(foreseen)
    maybe = [f.key for f in foreseen if f.would == MAYBE]
    print("would rebuild: " + (", ".join(rebuilt) if rebuilt else "nothing") +
          (f"; maybe: {', '.join(maybe)} (as what the sources fetch decides)" if maybe else ""))
    return 0

