"""`caseforge ingest SOURCE`: run a source's Prefect flow locally (ephemeral Prefect, no server needed)."""
from __future__ import annotations

import argparse
import sys
from typing import Callable

from caseforge.cli import CommandFailed, add_db_option

MAX_REASONS_PRINTED = 50


def _oyez(args: argparse.Namespace):
    from caseforge.flows.oyez import oyez_refresh

    return oyez_refresh(db=args.db, from_dir=args.from_dir, term=args.term, full=args.full,
                        legacy_table=args.legacy_table, return_state=True)


def _barexam(args: argparse.Namespace):
    from caseforge.flows.case_rag import barexam_import

    if not args.from_dir:
        raise ValueError("barexam: --from-dir DIR (holding barexam_qa.csv and passages_*.jsonl) is required")
    return barexam_import(from_dir=args.from_dir, db=args.db, return_state=True)


# source name -> function running its flow and returning the final Prefect state
SOURCES: dict[str, Callable[[argparse.Namespace], object]] = {"oyez": _oyez, "barexam": _barexam}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("ingest", help="fetch (or replay), parse, gate and curate one source")
    parser.add_argument("source", choices=sorted(SOURCES))
    parser.add_argument("--from-dir", help="replay recorded payloads from this folder instead of the network")
    parser.add_argument("--since", help="only what is new since this date (YYYY-MM-DD), where the source supports it")
    parser.add_argument("--term", help="oyez: one term only (e.g. 2015)")
    parser.add_argument("--full", action="store_true", help="re-check every item, not only what the list says changed")
    parser.add_argument("--legacy-table", help="oyez: also import the Oyez-derived CSV that carries dispositions")
    add_db_option(parser)
    parser.set_defaults(handler=run)


def report_state(state) -> int:
    """Print the counts; raise CommandFailed with one line per problem when the run did not fully succeed."""
    report = state.result(raise_on_failure=False)
    if isinstance(report, BaseException) or not isinstance(report, dict):
        raise CommandFailed([f"flow crashed: {report}"])
    counts = ", ".join(f"{k}={v}" for k, v in sorted(report["counts"].items()))
    print(f"{report['name']} (run {report['run_id']}): {counts}")
    if state.is_completed():
        return 0
    reasons = report["failures"] or [state.message or "failed"]
    if len(reasons) > MAX_REASONS_PRINTED:
        extra = len(reasons) - MAX_REASONS_PRINTED
        reasons = reasons[:MAX_REASONS_PRINTED] + [f"…and {extra} more (see `caseforge sql` on ops.quarantine)"]
    raise CommandFailed(reasons)


def run(args: argparse.Namespace) -> int:
    state = SOURCES[args.source](args)
    sys.stdout.flush()
    return report_state(state)
