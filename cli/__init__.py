"""`caseforge` command line: verb–noun (`ingest oyez`, `build casefacts`, `eval case`, ...). The top floor:
it reads caseforge.flows.registry and runs flows; nothing below imports it."""
from __future__ import annotations

import argparse
import logging
import os
import sys

from caseforge import flows  # noqa: F401  (sets Prefect's environment before anything imports Prefect)
from caseforge.cli import audit, build, evaluate, export, ingest, llm, run, sql, status
from caseforge.cli.common import CommandFailed

__all__ = ["build_parser", "main"]

VERBS = (ingest, build, evaluate, audit, export, run, sql, status, llm)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="caseforge", description="Legal benchmark datasets from court sources.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    for verb in VERBS:
        verb.register(sub)
    return parser


class _CurrentStderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record is emitted, not when logging was set up."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=[_CurrentStderrHandler()],
    )
    for noisy in ("httpx", "httpcore", "great_expectations"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    retry_before = os.environ.get("CASEFORGE_LLM_RETRY_FAILED")
    if getattr(args, "retry_failed", False):     # the environment reaches flows and their workers alike
        os.environ["CASEFORGE_LLM_RETRY_FAILED"] = "1"
    try:
        return args.handler(args) or 0
    except CommandFailed as exc:
        for reason in exc.reasons:
            print(f"caseforge: {reason}", file=sys.stderr)
        return 1
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"caseforge: {exc}", file=sys.stderr)
        return 2
    finally:                                    # main() also runs in-process (tests, notebooks): leave no trace
        if retry_before is None:
            os.environ.pop("CASEFORGE_LLM_RETRY_FAILED", None)
        else:
            os.environ["CASEFORGE_LLM_RETRY_FAILED"] = retry_before


if __name__ == "__main__":
    sys.exit(main())
