"""`caseforge aqeval run`: attributed QA on AQuAECHR (closed book, retrieve-then-generate, post-hoc)."""
from __future__ import annotations

import argparse
import sys

from caseforge.cli import CommandFailed, add_db_option

SYSTEMS = ("closed-book", "rtg-vanilla", "rtg-llatrieval", "posthoc-vanilla", "posthoc-rarr")
SHOWN = ("n", "n_failed", "rouge_l", "bertscore_f1", "claim_recall", "citation_faithfulness", "citation_f1",
         "evidence_nli", "citations_per_query", "invalid_citations", "nli_failed")


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--system", required=True, choices=SYSTEMS)
    parser.add_argument("--model", required=True, help="model name for the backend")
    parser.add_argument("--llm", required=True, help="LLM backend (replay, openai, llamacpp, vllm)")
    parser.add_argument("--replay-file", help="replay backend: JSONL of recorded answers")
    parser.add_argument("--items", help="expert-annotation JSON file to evaluate on (default: curated.aquaechr_qa kept rows)")
    parser.add_argument("--names", help="case id → name JSON (default: caseid_to_name.json next to --items)")
    parser.add_argument("--nli", default="llm", help="NLI judge: 'llm' (default) or 'cross-encoder:<local path>'")
    parser.add_argument("--nli-model", help="--nli llm: judge model (default: --model)")
    parser.add_argument("--k", type=int, default=5, help="passages shown to the model (default 5)")
    parser.add_argument("--retriever", default="bm25", choices=("bm25", "qlm", "dense", "hybrid"))
    parser.add_argument("--max-rounds", type=int, default=2, help="rtg-llatrieval: sufficiency-check rounds")
    parser.add_argument("--limit", type=int, help="only the first N items")
    parser.add_argument("--bertscore-model", help="local transformers model folder for BERTScore "
                                                  "(default: all-MiniLM-L6-v2 package)")
    parser.add_argument("--no-bertscore", action="store_true", help="skip BERTScore (recorded as skipped)")
    parser.add_argument("--index-dir", help="persist retriever indexes under this folder")
    parser.add_argument("--dense-model", help="sentence-transformers folder for the dense retriever")
    parser.add_argument("--out-dir", help="where the report (markdown) and CSV go (default data/eval/aquaechr)")
    add_db_option(parser)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("aqeval", help="AQuAECHR attributed QA evaluation")
    actions = parser.add_subparsers(dest="aqeval_action", required=True)
    run = actions.add_parser("run", help="run one system with one model and score it")
    add_run_arguments(run)
    run.set_defaults(handler=run_aqeval)


def run_aqeval(args: argparse.Namespace) -> int:
    from pathlib import Path

    from caseforge.config import settings as load_settings
    from caseforge.flows.aquaechr_eval import eval_aquaechr
    from caseforge.warehouse import connect, run_sql

    if args.items and not Path(args.items).is_file():
        raise FileNotFoundError(f"items file not found: {args.items}")
    if args.llm == "replay" and not args.replay_file:
        raise CommandFailed(["--llm replay needs --replay-file"])
    state = eval_aquaechr(system=args.system, llm=args.llm, model=args.model, db=args.db,
                          replay_file=args.replay_file, items_file=args.items, names_file=args.names, nli=args.nli,
                          nli_model=args.nli_model, k=args.k, retriever=args.retriever, max_rounds=args.max_rounds,
                          limit=args.limit, bertscore_model=args.bertscore_model, no_bertscore=args.no_bertscore,
                          index_dir=args.index_dir, dense_model=args.dense_model, out_dir=args.out_dir,
                          return_state=True)
    report = state.result(raise_on_failure=False)
    if isinstance(report, BaseException):
        raise CommandFailed([f"flow crashed: {report}"])
    con = connect(load_settings(args.db).db_path)
    try:
        rows = run_sql(con, "aqeval/latest_run_metrics.sql", {"system": args.system, "model": args.model}).fetchall()
    finally:
        con.close()
    values = {metric: (value, note) for metric, value, note in rows}
    for name in SHOWN:
        if name in values:
            value, note = values[name]
            print(f"{name:>22}  " + ("n/a" if value is None else f"{value:.4f}") + (f"  ({note})" if note else ""))
    sys.stdout.flush()
    if state.is_completed():
        return 0
    raise CommandFailed(report.get("failures", [])[:50] if isinstance(report, dict) else [state.message or "failed"])
