"""`caseforge ingest SOURCE`: run a source's flow locally (on the local Prefect server, no set-up needed); one
subcommand per source in caseforge.flows.registry.SOURCES, each with only its own options."""
from __future__ import annotations

import argparse

from caseforge.cli.common import CommandError, add_db_option, add_entry_subcommands, finish, flow_arguments, run_flow
from caseforge.flows import registry


def _from_dir(parser: argparse.ArgumentParser, required: bool = False, what: str = "recorded payloads") -> None:
    parser.add_argument("--from-dir", dest="from_dir", required=required,
                        help=f"read {what} from this folder instead of the network" if not required
                        else f"folder of {what}")


def oyez_options(parser: argparse.ArgumentParser) -> None:
    _from_dir(parser, what="case-detail JSON files (one per case)")
    parser.add_argument("--term", help="one term only (e.g. 2015)")
    parser.add_argument("--full", action="store_true", help="re-check every case, not only what the list says changed")
    parser.add_argument("--legacy-table", dest="legacy_table",
                        help="also import the Oyez-derived CSV that carries dispositions")


def hudoc_options(parser: argparse.ArgumentParser) -> None:
    _from_dir(parser, what="metadata JSON and ITEMID.html / ITEMID.docx bodies")
    parser.add_argument("--since", help="only judgments since this date (YYYY-MM-DD); default: the latest known, "
                                        "minus an overlap")
    parser.add_argument("--max-documents", dest="max_documents", type=int, default=5000,
                        help="judgment bodies fetched per run (default 5000)")


def guides_options(parser: argparse.ArgumentParser) -> None:
    _from_dir(parser, what="guide PDFs, form-feed texts or extracted-page CSVs")
    parser.add_argument("--guides", help="comma-separated guide ids to fetch (e.g. guide_art_2_eng)")
    parser.add_argument("--french-map", dest="french_map", help="CSV mapping French to English itemids")


def cn_options(parser: argparse.ArgumentParser) -> None:
    _from_dir(parser, what="judgment dumps (JSONL/JSON/CSV, GBK or UTF-8)")
    parser.add_argument("--doc-ids", dest="doc_ids",
                        help="file of document ids to fetch with your own session (CASEFORGE_WENSHU_COOKIES)")
    parser.add_argument("--filters", help="JSON file overriding the CaseGen filter defaults")
    parser.add_argument("--select", dest="select_n", type=int, default=0,
                        help="pick this many representatives of the kept documents")
    parser.add_argument("--clusters", type=int, default=10, help="K-Means clusters for --select (default 10)")
    parser.add_argument("--embedder", default="tfidf-char",
                        help="'tfidf-char' (default, offline) or 'sentence-transformers:<local model folder>'")
    parser.add_argument("--seed", type=int, default=0, help="seed of the embedding reduction and K-Means")


def barexam_options(parser: argparse.ArgumentParser) -> None:
    _from_dir(parser, required=True, what="barexam_qa.csv and passages_*.jsonl")


OPTIONS = {"oyez": oyez_options, "hudoc": hudoc_options, "guides": guides_options, "cn": cn_options,
           "barexam": barexam_options}


def add_reparse_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reparse", action="store_true",
                        help="parse every file again, also those this parser version already loaded")


def register(sub: argparse._SubParsersAction) -> None:
    add_entry_subcommands(sub, "ingest", "fetch (or replay), parse, gate and curate one source", "source", "SOURCE",
                          registry.SOURCES, OPTIONS, run, add_reparse_option, add_db_option)


def run(args: argparse.Namespace) -> int:
    source = registry.SOURCES[args.source]
    if args.source == "cn" and not (args.from_dir or args.doc_ids):
        raise CommandError(["cn: --from-dir DIR is required (a folder of judgment dumps: JSONL/JSON/CSV); "
                             "or --doc-ids FILE with CASEFORGE_WENSHU_COOKIES set for the site's API"])
    if args.source == "guides":
        args.guide_ids = [g.strip() for g in args.guides.split(",") if g.strip()] if args.guides else None
    flow = source.flow()
    return finish(run_flow(flow, **flow_arguments(flow, args)))
