"""`caseforge casegen build|eval`: the CaseGen drafting benchmark (Chinese judgments)."""
from __future__ import annotations

import argparse
import os
import sys

from caseforge.cli import CommandFailed, add_db_option
from caseforge.commands.ingest import report_state

TASK_CHOICES = ["defense", "facts", "reasoning", "judgment"]


def build_options() -> argparse.ArgumentParser:
    build = argparse.ArgumentParser(add_help=False)
    build.add_argument("--from-file", help="CaseGen-format JSONL (evidence as a {name: content} dict imports directly)")
    build.add_argument("--limit", type=int, help="at most this many source documents")
    add_db_option(build)
    return build


def eval_options() -> argparse.ArgumentParser:
    ev = argparse.ArgumentParser(add_help=False)
    ev.add_argument("--model", action="append", required=True, help="model to evaluate (repeat for several)")
    ev.add_argument("--llm", required=True, help="backend for the evaluated models: replay, openai, llamacpp, vllm")
    ev.add_argument("--judge-model", help="judge model (default: $CASEFORGE_CASEGEN_JUDGE)")
    ev.add_argument("--judge-llm", help="backend for the judge (default: --llm)")
    ev.add_argument("--replay-file", help="replay file for the replay backend")
    ev.add_argument("--judge-replay-file", help="replay file for the judge (default: --replay-file)")
    ev.add_argument("--task", choices=TASK_CHOICES, help="one task only")
    ev.add_argument("--limit", type=int, help="at most this many items per task")
    ev.add_argument("--max-input-chars", type=int, default=8000, help="input budget; longer inputs are cut from the middle")
    ev.add_argument("--max-input-tokens", type=int, help="input budget in tokens instead (needs --tokenizer)")
    ev.add_argument("--tokenizer", help="LOCAL tokenizer folder that counts --max-input-tokens")
    ev.add_argument("--max-new-tokens", type=int, default=1024)
    ev.add_argument("--bert-model", help="LOCAL folder of a Chinese BERT for BERTScore (never downloaded); omit to skip")
    ev.add_argument("--human-scores", help="CSV/JSONL of item_id, model, score: report agreement with people")
    ev.add_argument("--out-dir", default="data/reports/casegen", help="where the leaderboard and plots go")
    ev.add_argument("--allow-same-family", action="store_true", help="let a judge of the judged model's family judge")
    ev.add_argument("--skip-judge", action="store_true", help="reference metrics only, no judge")
    ev.add_argument("--no-plots", action="store_true", help="leaderboard files only, no PNG plots")
    add_db_option(ev)
    return ev


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("casegen", help="CaseGen: build drafting tasks from gold sections, evaluate models")
    actions = parser.add_subparsers(dest="casegen_action", required=True)
    actions.add_parser("build", parents=[build_options()], help="gold sections → curated.casegen_items"
                       ).set_defaults(handler=run_build)
    actions.add_parser("eval", parents=[eval_options()], help="generate, judge, score and report"
                       ).set_defaults(handler=run_eval)


def run_build(args: argparse.Namespace) -> int:
    from caseforge.flows.casegen_build import casegen_build

    state = casegen_build(db=args.db, from_file=args.from_file, limit=args.limit, return_state=True)
    sys.stdout.flush()
    return report_state(state)


def eval_params(args: argparse.Namespace):
    from caseforge.tasks.casegen.evaluate import EvalConfig
    from caseforge.tasks.casegen.judge import SameFamilyJudge, check_judge_family
    from caseforge.tasks.casegen.pipeline import EvalParams

    judge_model = None if args.skip_judge else (args.judge_model or os.environ.get("CASEFORGE_CASEGEN_JUDGE"))
    if not judge_model and not args.skip_judge:
        raise CommandFailed(["casegen eval needs a judge: --judge-model M (or CASEFORGE_CASEGEN_JUDGE), or --skip-judge"])
    if judge_model:
        try:
            check_judge_family(args.model, judge_model, args.allow_same_family)
        except SameFamilyJudge as exc:
            raise CommandFailed([str(exc)]) from exc
    return EvalParams(models=args.model, llm=args.llm, judge_model=judge_model, judge_llm=args.judge_llm,
                      replay_file=args.replay_file, judge_replay_file=args.judge_replay_file, task=args.task,
                      limit=args.limit, config=EvalConfig(max_input_chars=args.max_input_chars,
                                                          max_new_tokens=args.max_new_tokens,
                                                          max_input_tokens=args.max_input_tokens,
                                                          tokenizer_path=args.tokenizer),
                      bert_model=args.bert_model, human_scores=args.human_scores, out_dir=args.out_dir,
                      allow_same_family=args.allow_same_family, plots=not args.no_plots)


def run_eval(args: argparse.Namespace) -> int:
    from caseforge.flows.casegen_eval import casegen_eval

    state = casegen_eval(params=eval_params(args), db=args.db, return_state=True)
    sys.stdout.flush()
    return report_state(state)
