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


def _hudoc(args: argparse.Namespace):
    from caseforge.flows.hudoc import hudoc_refresh

    return hudoc_refresh(db=args.db, from_dir=args.from_dir, since=args.since, return_state=True)


def _guides(args: argparse.Namespace):
    from caseforge.flows.guides import guides_refresh

    guide_ids = [g.strip() for g in args.guides.split(",") if g.strip()] if args.guides else None
    return guides_refresh(db=args.db, from_dir=args.from_dir, guide_ids=guide_ids, return_state=True)


def _cn(args: argparse.Namespace):
    from caseforge.flows.cn import cn_refresh
    from caseforge.tasks.cn.select import TFIDF

    if not args.from_dir and not args.doc_ids:
        raise CommandFailed(["cn: --from-dir DIR is required (a folder of judgment dumps: JSONL/JSON/CSV); "
                             "or --doc-ids FILE with CASEFORGE_WENSHU_COOKIES set for the site's API"])
    return cn_refresh(db=args.db, from_dir=args.from_dir, doc_ids=args.doc_ids, filters=args.filters, select_n=args.select or 0,
                      clusters=args.clusters, embedder=args.embedder or TFIDF, seed=args.seed, return_state=True)


def _barexam(args: argparse.Namespace):
    from caseforge.flows.case_rag import barexam_import

    if not args.from_dir:
        raise ValueError("barexam: --from-dir DIR (holding barexam_qa.csv and passages_*.jsonl) is required")
    return barexam_import(from_dir=args.from_dir, db=args.db, return_state=True)


# source name -> function running its flow and returning the final Prefect state
SOURCES: dict[str, Callable[[argparse.Namespace], object]] = {
    "oyez": _oyez, "hudoc": _hudoc, "guides": _guides, "cn": _cn, "barexam": _barexam,
}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("ingest", help="fetch (or replay), parse, gate and curate one source")
    parser.add_argument("source", choices=sorted(SOURCES))
    parser.add_argument("--from-dir", help="replay recorded payloads from this folder instead of the network")
    parser.add_argument("--since", help="only what is new since this date (YYYY-MM-DD), where the source supports it")
    parser.add_argument("--term", help="oyez: one term only (e.g. 2015)")
    parser.add_argument("--full", action="store_true", help="re-check every item, not only what the list says changed")
    parser.add_argument("--legacy-table", help="oyez: also import the Oyez-derived CSV that carries dispositions")
    parser.add_argument("--guides", help="guides: comma-separated guide ids to fetch (e.g. guide_art_2_eng)")
    parser.add_argument("--doc-ids", help="cn: file of document ids to fetch with your own session (see tasks/cn/api.py)")
    parser.add_argument("--filters", help="cn: JSON file overriding the CaseGen filter defaults")
    parser.add_argument("--select", type=int, help="cn: pick this many representatives of the kept documents")
    parser.add_argument("--clusters", type=int, default=10, help="cn: K-Means clusters for --select (default 10)")
    parser.add_argument("--embedder", help="cn: 'tfidf-char' (default, offline) or 'sentence-transformers:<local model folder>'")
    parser.add_argument("--seed", type=int, default=0, help="cn: seed of the embedding reduction and K-Means")
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
