"""`caseforge` command line. Each command group lives in caseforge/commands/ and registers itself."""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

from caseforge.errors import CommandFailed
from caseforge.orchestration import quiet_prefect_defaults

__all__ = ["CommandFailed", "add_db_option", "main"]

COMMAND_MODULES = [
    "caseforge.commands.ingest",
    "caseforge.commands.query",
    "caseforge.commands.casegen",
    "caseforge.commands.llm",
    "caseforge.commands.operations",
    "caseforge.commands.audit",
    "caseforge.commands.build",
    "caseforge.commands.export",
    "caseforge.commands.aquaechr",
    "caseforge.commands.evaluate",
    "caseforge.commands.aqeval",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="caseforge", description="Legal benchmark datasets from court sources.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="DuckDB file (default: $CASEFORGE_DB or data/caseforge.duckdb)")


class _CurrentStderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record is emitted, not when logging was set up."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    quiet_prefect_defaults()
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=[_CurrentStderrHandler()],
    )
    for noisy in ("httpx", "httpcore", "great_expectations"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return args.handler(args) or 0
    except CommandFailed as exc:
        for reason in exc.reasons:
            print(f"caseforge: {reason}", file=sys.stderr)
        return 1
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"caseforge: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
