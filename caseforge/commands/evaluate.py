"""`caseforge eval casefacts|case`: score systems on CaseFacts claims and Bar Exam questions."""
from __future__ import annotations

import argparse
import json
import sys

from caseforge.cli import CommandFailed, add_db_option

KEY_METRICS = ("n", "recall@1", "recall@5", "recall@10", "evidence_score", "evidence_score_f1",
               "verdict_accuracy", "verdict_score", "accuracy", "accuracy_unanimous", "n_unanimous", "accuracy_split",
               "n_split", "n_skipped_gold_missing", "n_failed")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--k", type=int, default=10, help="evidence passed on / scored (default 10)")
    parser.add_argument("--llm", help="LLM backend (replay, openai, llamacpp, vllm)")
    parser.add_argument("--model", help="model name for the backend")
    parser.add_argument("--replay-file", help="replay backend: JSONL of recorded answers")
    parser.add_argument("--index-dir", help="folder of persisted indexes (default data/indexes)")
    parser.add_argument("--mu", type=float, default=2000.0, help="QLM Dirichlet prior (default 2000)")
    parser.add_argument("--rrf-k", type=int, default=60, help="hybrid reciprocal rank fusion k (default 60)")
    parser.add_argument("--dense-model", help="sentence-transformers model folder (default all-MiniLM-L6-v2 package)")
    parser.add_argument("--limit", type=int, help="only the first N items")
    parser.add_argument("--out-dir", help="where the exported metrics JSON / items CSV go")
    add_db_option(parser)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("eval", help="evaluate retrieval / verification / QA systems")
    tasks = parser.add_subparsers(dest="eval_task", required=True)

    casefacts = tasks.add_parser("casefacts", help="CaseFacts claims: retrieval recall, evidence and verdict scores")
    casefacts.add_argument("--claims", required=True, help="claims JSON in the released CaseFacts format")
    casefacts.add_argument("--system", required=True,
                           choices=("bm25", "qlm", "dense", "hybrid", "closed-book", "retrieve-verify", "case"))
    casefacts.add_argument("--retriever", default="bm25", choices=("bm25", "qlm", "dense", "hybrid"),
                           help="retriever used by retrieve-verify and case (default bm25)")
    casefacts.add_argument("--missing-gold", choices=("skip", "miss"), default="skip",
                           help="claims whose gold case is not in the corpus: skip them (default) or count as misses")
    casefacts.add_argument("--max-rounds", type=int, default=2, help="case: query-rewrite rounds per advocate")
    casefacts.add_argument("--seed", type=int, default=0, help="case: jury sampling seed")
    _common(casefacts)
    casefacts.set_defaults(handler=run_casefacts)

    case = tasks.add_parser("case", help="Bar Exam QA: CASE and its baselines")
    case.add_argument("--system", required=True,
                      choices=("llm-only", "bm25-rag", "qlm-rag", "dense-rag", "oracle", "case"))
    case.add_argument("--retriever", default="bm25", choices=("bm25", "qlm", "dense", "hybrid"),
                      help="case: retriever the advocates search with")
    case.add_argument("--max-rounds", type=int, default=2)
    case.add_argument("--seed", type=int, default=0)
    _common(case)
    case.set_defaults(handler=run_case)

    from caseforge.commands import aqeval, aquaechr, casegen

    tasks.add_parser("casegen", parents=[casegen.eval_options()], help="CaseGen: generate, judge, score, report"
                     ).set_defaults(handler=casegen.run_eval)
    attributed = tasks.add_parser("aquaechr", help="AQuAECHR attributed QA: closed book, retrieve-then-generate, "
                                  "post-hoc attribution")
    aqeval.add_run_arguments(attributed)
    attributed.set_defaults(handler=aqeval.run_aqeval)
    tasks.add_parser("aquaechr-filter", parents=[aquaechr.eval_filter_options()],
                     help="AQuAECHR: the quality judge's F1 against expert scores").set_defaults(
                         handler=aquaechr.run_eval_filter)


def print_metrics(metrics: dict[str, float], fmt: str) -> None:
    if fmt == "json":
        print(json.dumps(metrics, indent=1, sort_keys=True))
        return
    for name in KEY_METRICS:
        if name in metrics:
            value = metrics[name]
            print(f"{name:>24}  {value:.4f}" if isinstance(value, float) and not float(value).is_integer()
                  else f"{name:>24}  {value:g}")


def _finish(state, db: str | None, run_id: str, fmt: str) -> int:
    """Print the run's stored metrics; exit status from the flow's state."""
    from caseforge.config import settings as load_settings
    from caseforge.tasks.evaluation import store
    from caseforge.warehouse import connect

    report = state.result(raise_on_failure=False)
    if isinstance(report, BaseException) or not isinstance(report, dict):
        raise CommandFailed([f"flow crashed: {report}"])
    con = connect(load_settings(db).db_path)
    try:
        metrics = store.load_metrics(con, run_id)
    finally:
        con.close()
    print_metrics(metrics, fmt)
    sys.stdout.flush()
    if state.is_completed():
        return 0
    raise CommandFailed(report["failures"][:50] or [state.message or "failed"])


def run_casefacts(args: argparse.Namespace) -> int:
    from pathlib import Path

    from caseforge.flows.eval_casefacts import eval_casefacts, run_parameters
    from caseforge.tasks.evaluation import store
    from caseforge.tasks.evaluation.casefacts_data import file_sha
    from caseforge.tasks.evaluation.casenames import DEFAULT_FUZZY_THRESHOLD

    if not Path(args.claims).is_file():
        raise FileNotFoundError(f"claims file not found: {args.claims}")
    if args.system in ("closed-book", "retrieve-verify", "case") and not (args.llm and args.model):
        raise CommandFailed([f"--system {args.system} needs --llm BACKEND and --model M"])
    state = eval_casefacts(claims=args.claims, system=args.system, db=args.db, k=args.k,
                           missing_gold=args.missing_gold, limit=args.limit, index_dir=args.index_dir,
                           mu=args.mu, rrf_k=args.rrf_k, dense_model=args.dense_model, llm=args.llm,
                           model=args.model, replay_file=args.replay_file, retriever=args.retriever,
                           max_rounds=args.max_rounds, seed=args.seed, out_dir=args.out_dir, return_state=True)
    params = run_parameters(args.system, args.k, args.missing_gold, args.limit, args.mu, args.rrf_k,
                            DEFAULT_FUZZY_THRESHOLD, args.llm, args.model, args.retriever, args.max_rounds, args.seed)
    run_id = store.eval_run_id("casefacts", args.system, file_sha(Path(args.claims)), params)
    return _finish(state, args.db, run_id, args.format)


def run_case(args: argparse.Namespace) -> int:
    from caseforge.flows.case_rag import case_eval

    if not (args.llm and args.model):
        raise CommandFailed([f"--system {args.system} needs --llm BACKEND and --model M"])
    state, run_id = case_eval(system=args.system, db=args.db, k=args.k, limit=args.limit, llm=args.llm,
                              model=args.model, replay_file=args.replay_file, retriever=args.retriever,
                              max_rounds=args.max_rounds, seed=args.seed, index_dir=args.index_dir, mu=args.mu,
                              rrf_k=args.rrf_k, dense_model=args.dense_model, out_dir=args.out_dir)
    return _finish(state, args.db, run_id, args.format)
