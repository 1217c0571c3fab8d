"""`caseforge` command line: verb–noun (`ingest oyez`, `build casefacts`, `eval case`, ...). The top floor:
it reads caseforge.flows.registry and runs flows; nothing below imports it."""
from __future__ import annotations

import argparse
import logging
import sys
import traceback

from caseforge import flows  # noqa: F401  (sets Prefect's environment before anything imports Prefect)
from caseforge import settings, stopping
from caseforge.cli import audit, build, common, evaluate, export, ingest, llm, review, run, server, sql, status
from caseforge.cli.common import CommandFailed, one_line, quiet_once_stopped, terminal_tracebacks
from caseforge.disk_full import disk_full_line
from caseforge.run_record import stop_open_runs

__all__ = ["build_parser", "main"]

VERBS = (ingest, build, evaluate, audit, export, review, run, sql, status, llm, server)


def build_parser() -> argparse.ArgumentParser:
    parser = common.ArgumentParser(prog="caseforge", description="Legal benchmark datasets from court sources.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--debug", action="store_true",
                        help="print the Python traceback of an error (and Prefect's) besides its one-line reason")
    sub = parser.add_subparsers(dest="command", required=True)
    for verb in VERBS:
        verb.register(sub)
    for leaf in _leaf_parsers(parser):      # `--debug` after the subcommand too (`caseforge sql "..." --debug`)
        leaf.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


def _leaf_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        return [parser]
    leaves = []
    for action in subparsers:
        for child in dict.fromkeys(action.choices.values()):      # aliases share a parser
            leaves += _leaf_parsers(child)
    return leaves


class _CurrentStderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record is emitted, not when logging was set up."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    """The command line. Run as the program itself (`argv` None), a stopped command leaves within
    caseforge.stopping.STOP_GRACE_S even when some work cannot be stopped (a thread stuck in a read)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=[_CurrentStderrHandler()],
    )
    logging.getLogger("caseforge").setLevel(logging.DEBUG if args.verbose else logging.INFO)
    for noisy in ("httpx", "httpcore", "great_expectations", "botocore", "aiobotocore", "s3fs"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    common.SHOW_TRACEBACKS = args.debug
    terminal_tracebacks(args.debug)
    quiet_once_stopped()
    unraisable_before = sys.unraisablehook
    sys.unraisablehook = _quiet_about_lost_stops(unraisable_before)
    leaving = argv is None                      # the `caseforge` program itself, not a call in-process
    with stopping.stop_on_signals(exit_when_stuck=leaving, before_leaving=(stop_open_runs,)):
        try:
            code = _command(args, unraisable_before, forget_stop=not leaving)
            if leaving:     # the exit hooks' handler takes over inside the block: no moment with SIGTERM's default
                stopped = stopping.stop_requested()     # action (a second signal of `timeout` killed the command)
                stopping.stop_quietly_while_leaving(code)
        except KeyboardInterrupt as exc:    # a first stop signal after the work, before the exit hooks' handler
            if not leaving:
                raise
            code, stopped = _stopped_while_returning(exc)
        if leaving and stopped is not None:     # only now: a second signal before this leaves at once, with the
            stopping.forget_stop()              # stop's status
    return code


def _stopped_while_returning(exc: KeyboardInterrupt) -> tuple[int, stopping.StopRequest]:
    """The program's end when a stop signal came after its work, while main returned: as a stop during the work
    (its runs recorded, its one line), and the exit hooks' handler in place."""
    request = stopping.stop_of(exc)
    code = _ended_stopped(request)
    stopping.stop_quietly_while_leaving(code)
    return code, request


def _ended_stopped(request: stopping.StopRequest) -> int:
    """A stopped command's end: its runs recorded as stopped, its one line; the exit status."""
    stop_open_runs(request)
    stopping.say_stopped(request)
    return request.exit_code


def _command(args: argparse.Namespace, unraisable_before, forget_stop: bool = True) -> int:
    try:
        return _run(args)
    except CommandFailed as exc:
        if args.debug and (exc.__cause__ or exc.__context__):
            traceback.print_exception(exc, file=sys.stderr)
        for reason in exc.reasons:
            print(f"caseforge: {reason}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    except KeyboardInterrupt as exc:  # SIGINT, SIGTERM, a Prefect cancellation: one line, runs recorded
        return _ended_stopped(stopping.stop_of(exc))
    except BrokenPipeError:                 # `caseforge status | head`: the reader has what it wanted
        common.quiet_stdout()
        return 141                          # what a shell reports for a command ended by SIGPIPE
    except Exception as exc:      # an ordinary mistake: its reason in one line; the traceback with --debug
        stopped = stopping.stop_requested()
        if stopped is not None:     # the stop's own exception, changed on its way (Python 3.11 wraps one raised
            return _ended_stopped(stopped)      # in a class's __set_name__, during an import, in a RuntimeError)
        if args.debug:
            traceback.print_exc(file=sys.stderr)
        full = disk_full_line(exc, args.command, _written_near(args))
        print(f"caseforge: {full or one_line(exc)}", file=sys.stderr)
        return 1 if full else 2           # a full disk met while working: a run that failed, not a usage error
    finally:                                # main() also runs in-process (tests, notebooks): leave no trace
        if forget_stop:
            stopping.forget_stop()
        sys.unraisablehook = unraisable_before


def _written_near(args: argparse.Namespace):
    """A path on the disk the command writes (its --out, else its warehouse), to name a full disk by."""
    from pathlib import Path

    where = getattr(args, "out", None) or getattr(args, "db", None)
    if where is None:
        from caseforge.settings import read_settings

        try:
            where = read_settings().db_path         # the warehouse the settings name (CASEFORGE_DB, else the default)
        except Exception:                           # noqa: BLE001  (settings that cannot be read name no disk)
            return None
    return Path(where) if where and "://" not in str(where) else None


def _quiet_about_lost_stops(hook):
    """A stop signal's exception raised inside a finaliser is lost to Python ("Exception ignored in ...", a
    traceback on the terminal); the stop itself is not (caseforge.stopping keeps it and the run stops at its next
    step), so it is not printed. Everything else goes to `hook`."""
    def quiet(unraisable) -> None:
        error = unraisable.exc_value
        if isinstance(error, KeyboardInterrupt) or type(error).__name__ == "TerminationSignal":
            return
        hook(unraisable)
    return quiet


def _run(args: argparse.Namespace) -> int:
    with settings.using(_command_settings(args)):
        try:
            return args.handler(args) or 0
        except Exception as exc:
            if stopping.stop_requested() is None:
                raise
            raise stopping.RunStopped(stopping.stop_requested()) from exc    # what failed, failed because of the stop


def _command_settings(args: argparse.Namespace) -> settings.Settings:
    """The settings the command runs with, read and checked whole once, before any work starts, with its flags:
    `--retry-failed` and `--refresh` reach every flow the command runs as values of these settings."""
    from caseforge.flows.settings_check import command_settings

    try:
        found = command_settings()
    except settings.SettingsError as exc:
        raise common.CommandError(exc.problems) from None
    if getattr(args, "retry_failed", False):
        found = found.model_copy(update={"llm_retry_failed": True})
    if getattr(args, "refresh", False):
        found = found.model_copy(update={"llm_refresh": True})
    return found


if __name__ == "__main__":
    sys.exit(main())
