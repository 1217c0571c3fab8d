"""What every command shares: the --db and --format options, running a flow and reporting on it (the rows a
command lists are written by caseforge.cli.rows)."""
from __future__ import annotations

import argparse
import contextlib
import difflib
import inspect
import logging
import os
import re
import sys
from typing import Iterable

from caseforge.errors import CommandFailed
from caseforge.stage_report import known_problems_of

__all__ = ["ArgumentParser", "FORMATS", "CommandError", "CommandFailed", "add_db_option", "add_entry_subcommands",
           "add_format_option",
           "add_llm_cache_options", "flow_arguments", "flow_report", "flows_session", "is_ordinary",
           "notes_out", "one_line", "quiet_once_stopped", "run_flow", "terminal_tracebacks",
           "unknown_value"]

MAX_REASONS_PRINTED = 50
SHOW_TRACEBACKS = False          # `--debug` (caseforge.cli.main sets it)


class CommandError(CommandFailed):
    """The command could not do what was asked (a bad query, an unwritable folder): exit status 2, like
    any other error, where a run that failed or quarantined data exits 1."""

    exit_code = 2


def did_you_mean(value: str, known: Iterable[str]) -> str:
    """'; did you mean X?' for the known name closest to a mistyped `value` ('' when none is close)."""
    close = difflib.get_close_matches(value, sorted(set(known)), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def unknown_value(kind: str, value: str, known: Iterable[str]) -> CommandError:
    """The error for a name the command does not know (a table, a step): exit 2, the closest known name, and
    the known names."""
    names = sorted(set(known))
    listed = ", ".join(names[:15]) + (f" and {len(names) - 15} more" if len(names) > 15 else "")
    return CommandError([f"unknown {kind} {value!r}{did_you_mean(value, names)} (known: {listed or 'none'})"])


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose errors are one line (exit 2), with a did-you-mean for a mistyped choice or
    subcommand; `--help` shows the usage."""

    _INVALID_CHOICE = re.compile(r"invalid choice: (?P<value>'[^']*'|\S+) \(choose from (?P<choices>.*)\)")

    def error(self, message: str):
        found = self._INVALID_CHOICE.search(message)
        if found:
            choices = [c.strip().strip("'") for c in found["choices"].split(",")]
            message += did_you_mean(found["value"].strip("'"), choices)
        self.exit(2, f"caseforge: {message} (see `{self.prog} --help`)\n")


def quiet_stdout() -> None:
    """After a broken pipe: stdout goes to /dev/null, so the interpreter's last flush at exit finds no closed
    pipe to complain about ("Exception ignored ... BrokenPipeError")."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return                                  # not a real file (in-process callers, tests)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="DuckDB file (default: $CASEFORGE_DB or data/caseforge.duckdb)")


def add_mirror_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mirror", metavar="URL",
                        help="answer from the mirror published at URL (s3://bucket/prefix, gs://..., file://...; "
                             "[mirror] publish on the machine that runs the nightly), from any machine with read "
                             "credentials, instead of a warehouse on this one")


def open_query(args: argparse.Namespace, settings, bounds=None):
    """The sandboxed query connection a command asked for: on the published mirror `--mirror URL` names, else
    on the warehouse (or its local mirror while a run holds it). Returns (connection, mode)."""
    from caseforge.warehouse.query import open_for_query, open_published_for_query

    if getattr(args, "mirror", None):
        return open_published_for_query(args.mirror, bounds, settings.file.mirror.endpoint_url or None)
    return open_for_query(settings.db_path, settings.parquet_dir, bounds)


# Every command that prints rows offers these: a table for people (numbers rounded, times to the second), csv
# and json for programs (exact values; stdout holds the data alone, every note goes to stderr).
FORMATS = ("table", "csv", "json")


def add_format_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="table (default, for people: numbers rounded), csv or json (for programs: exact values, "
                             "stdout holds the data alone and notes go to stderr)")


def notes_out(fmt: str):
    """Where a command's words besides its data go: stderr when stdout is csv or json, else stdout."""
    return sys.stderr if fmt in ("csv", "json") else sys.stdout


def add_entry_subcommands(sub: argparse._SubParsersAction, verb: str, help: str, dest: str, metavar: str,
                          entries: dict, options: dict, handler, *extra) -> None:
    """`caseforge VERB NAME`: one subcommand per registry entry (its description the help), each with its own
    options (`options[name](parser)`), then each of `extra` (add_db_option, ...), running `handler`."""
    parser = sub.add_parser(verb, help=help)
    names = parser.add_subparsers(dest=dest, required=True, metavar=metavar)
    for name, entry in entries.items():
        one = names.add_parser(name, help=entry.description)
        options[name](one)
        for add in extra:
            add(one)
        one.set_defaults(handler=handler)


def add_llm_cache_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--retry-failed", dest="retry_failed", action="store_true",
                        help="ask again, once, every LLM request whose cached answer is a failure "
                             "(default: the settings' [llm] retry_failed)")
    parser.add_argument("--refresh", dest="refresh", action="store_true",
                        help="ask every LLM request again, cached or not; the new answers replace the cached "
                             "ones, which are kept in ops.llm_call_history")


def one_line(exc: BaseException) -> str:
    """An error's reason as one line: DuckDB's message without the echoed query, an OS error with its path."""
    import duckdb

    if isinstance(exc, duckdb.Error):
        paragraph = str(exc).strip().split("\n\n")[0]
        return " ".join(line.strip() for line in paragraph.splitlines() if line.strip())
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        return f"{exc.strerror}: {exc.filename}"
    text = " ".join(str(exc).split())
    if isinstance(exc, (FileNotFoundError, ValueError, RuntimeError)) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def is_ordinary(exc: BaseException) -> bool:
    """Whether an exception that ended a flow is an ordinary condition (a missing or unwritable file, a busy,
    corrupt or newer warehouse, a bad value, a replay file without the answer, a store that cannot be used): one
    line, exit 2. Anything else is the program breaking: "crashed"."""
    import duckdb

    from caseforge.llm.backends.replay import ReplayMiss
    from caseforge.store import StoreError
    from caseforge.warehouse.errors import WarehouseError

    return isinstance(exc, (OSError, ValueError, WarehouseError, CommandFailed, ReplayMiss, StoreError,
                            duckdb.IOException))


class _NoExceptionRecords(logging.Filter):
    """Drops, from the terminal only, Prefect's records of the exception that ended a flow or task run
    ("Encountered exception during execution: ...", "Finished in state Failed('... encountered an
    exception ...')"): the command says it once, in its own line. Prefect's run log keeps them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(("prefect.flow_runs", "prefect.task_runs")):
            return True
        if record.exc_info:
            return False
        message = record.getMessage()
        return not (message.startswith("Finished in state Failed(") and "encountered an exception" in message)


_QUIET = _NoExceptionRecords()


# A run's Failed state as Prefect logs it, whose message goes on past its count of problems ("builder x
# quarantined: 2 problems, first: ...; last: ...", "nightly 3: 2 stage(s) failed (...), 5 problem(s): ...").
_FAILED_WITH_PROBLEMS = re.compile(r"(Finished in state Failed\((['\"]).*?\b\d+ problem(?:s|\(s\))?)[:,] .*(\2\))",
                                   re.S)


class _WithoutTraceback(logging.Formatter):
    """A terminal handler's formatter minus the traceback, and minus the problems a Failed state's message
    lists after their count (the command lists each once at its end): the record itself is left whole, so
    Prefect's API handler (the run log in the UI) still gets it."""

    def __init__(self, inner: logging.Formatter):
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.exc_text or record.stack_info:
            record = logging.makeLogRecord(record.__dict__)
            record.exc_info = record.exc_text = record.stack_info = None
        if record.name.startswith(("prefect.flow_runs", "prefect.task_runs")):
            message = record.getMessage()
            shorter = _FAILED_WITH_PROBLEMS.fullmatch(message)
            if shorter is not None:
                record = logging.makeLogRecord({**record.__dict__, "msg": shorter[1] + shorter[3], "args": ()})
        return self.inner.format(record)


def terminal_tracebacks(show: bool) -> None:
    """Show or hide tracebacks in what logging (Prefect's console handler among it) prints on the terminal.

    Prefect logs a failing task or flow with its whole traceback (tens of lines) before the command's
    one-line reason; without --debug the terminal gets the log line alone."""
    loggers = [logging.getLogger()] + [logger for logger in list(logging.root.manager.loggerDict.values())
                                       if isinstance(logger, logging.Logger)]
    for logger in loggers:
        for handler in logger.handlers:
            module = type(handler).__module__
            if not isinstance(handler, logging.StreamHandler) or not module.startswith(("prefect", "logging",
                                                                                          "caseforge")):
                continue                      # files, the API handler, pytest's capture: untouched
            current = handler.formatter
            if show and isinstance(current, _WithoutTraceback):
                handler.setFormatter(current.inner)
            elif not show and not isinstance(current, _WithoutTraceback):
                handler.setFormatter(_WithoutTraceback(current or logging.Formatter()))
            if show:
                handler.removeFilter(_QUIET)
            elif _QUIET not in handler.filters:
                handler.addFilter(_QUIET)


class _QuietOnceStopped(logging.Filter):
    """Nothing more on the terminal once the command was told to stop (Ctrl-C): Prefect's "Crash detected!"
    and "Finished in state" lines of every task and flow run would come first. The command says it in one line;
    Prefect's run log (the API handler, not filtered) keeps them all."""

    def filter(self, record: logging.LogRecord) -> bool:
        from caseforge.stopping import stop_requested

        return stop_requested() is None


def quiet_once_stopped() -> None:
    """_QuietOnceStopped on every handler that writes to the terminal (the same ones as terminal_tracebacks)."""
    loggers = [logging.getLogger()] + [logger for logger in list(logging.root.manager.loggerDict.values())
                                       if isinstance(logger, logging.Logger)]
    for logger in loggers:
        for handler in logger.handlers:
            module = type(handler).__module__
            if (isinstance(handler, logging.StreamHandler) and module.startswith(("prefect", "logging", "caseforge"))
                    and not any(isinstance(f, _QuietOnceStopped) for f in handler.filters)):
                handler.addFilter(_QuietOnceStopped())


def flow_arguments(flow, args: argparse.Namespace) -> dict:
    """The flow's parameters that the command line sets (options are named after the parameters)."""
    names = inspect.signature(flow.fn).parameters
    return {name: getattr(args, name) for name in names if hasattr(args, name)}


@contextlib.contextmanager
def flows_session():
    """Around a command's flow runs: Prefect wired into caseforge (caseforge.flows.wiring.install: artifacts,
    host slots, fan-out, progress lines on the terminal and in the run log), Prefect's terminal output without
    tracebacks (unless --debug; Prefect's run log keeps them), and the Prefect server the flows report to
    (caseforge.runtime.prefect_api: the user's PREFECT_API_URL, else the shared local server, started in the
    background when none is up)."""
    import prefect.main  # noqa: F401  (Prefect sets its logging handlers up when imported)

    from caseforge.runtime.prefect_api import prefect_api
    from caseforge.flows.wiring import install

    install()
    terminal_tracebacks(SHOW_TRACEBACKS)
    quiet_once_stopped()
    with prefect_api():
        yield


def run_flow(flow, summary_to=None, **kwargs) -> dict:
    """Run `flow` locally; print its counters (on `summary_to`, default stdout; stderr when stdout is data);
    return its report. CommandFailed (one line per problem) when it failed, quarantined data or crashed."""
    with flows_session():
        state = flow(**kwargs, return_state=True)
    sys.stdout.flush()
    report = flow_report(flow.name, state)
    counts = ", ".join(f"{k}={v}" for k, v in sorted(report["counts"].items()))
    print(f"{report['name']} (run {report['run_id']}): {counts}", file=summary_to or sys.stdout)
    known = known_problems_of(report["counts"])
    if known:
        print(f"{report['name']}: {known} (not failures: unchanged since; --reparse tries them again)",
              file=summary_to or sys.stdout)
    if not state.is_completed():
        reasons = report["failures"] or [state.message or "failed"]
        if len(reasons) > MAX_REASONS_PRINTED:
            extra = len(reasons) - MAX_REASONS_PRINTED
            reasons = reasons[:MAX_REASONS_PRINTED] + [f"…and {extra} more (see `caseforge sql` on ops.quarantine)"]
        report["problems"] = reasons
    return report


def flow_report(name: str, state) -> dict:
    """The report a flow's final state carries. A flow ended by an exception instead: a full disk is the line
    that says where (exit 1); an ordinary one (is_ordinary) is its reason in one line (exit 2); anything else
    "<flow> crashed" (exit 1)."""
    from caseforge.disk_full import disk_full_line
    from caseforge.flows.states import FlowCrashed, report_of

    try:
        return report_of(state)
    except FlowCrashed as exc:
        if exc.error is not None and (line := disk_full_line(exc.error, name)) is not None:
            raise CommandFailed([line]) from exc.error          # a run that did work, then met a full disk: 1
        if exc.error is not None and is_ordinary(exc.error):
            raise CommandError([one_line(exc.error)]) from exc.error
        raise CommandFailed([f"{name} crashed: {exc} (--debug shows the traceback)"]) from exc


def finish(report: dict) -> int:
    """Exit status of a command whose flow report `run_flow` returned."""
    if report.get("problems"):
        raise CommandFailed(report["problems"])
    return 0
