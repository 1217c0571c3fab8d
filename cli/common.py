"""What every command shares: the --db option, running a flow and reporting on it, printing rows."""
from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import decimal
import inspect
import json
import logging
import sys

from caseforge.errors import CommandFailed

__all__ = ["CommandError", "CommandFailed", "add_db_option", "add_retry_failed_option", "flow_arguments",
           "flows_session", "jsonable", "one_line", "print_rows", "quiet_once_stopped", "run_flow",
           "terminal_tracebacks"]

MAX_REASONS_PRINTED = 50
SHOW_TRACEBACKS = False          # `--debug` (caseforge.cli.main sets it)


class CommandError(CommandFailed):
    """The command could not do what was asked (a bad query, an unwritable folder): exit status 2, like
    any other error, where a run that failed or quarantined data exits 1."""

    exit_code = 2


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="DuckDB file (default: $CASEFORGE_DB or data/caseforge.duckdb)")


def add_retry_failed_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--retry-failed", dest="retry_failed", action="store_true",
                        help="ask again, once, every LLM request whose cached answer is a failure "
                             "(default: the settings' [llm] retry_failed)")


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


class _WithoutTraceback(logging.Formatter):
    """A terminal handler's formatter minus the traceback: the record itself is left whole, so Prefect's
    API handler (the run log in the UI) still gets it."""

    def __init__(self, inner: logging.Formatter):
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.exc_text or record.stack_info:
            record = logging.makeLogRecord(record.__dict__)
            record.exc_info = record.exc_text = record.stack_info = None
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


class _QuietOnceStopped(logging.Filter):
    """Nothing more on the terminal once the command was told to stop (Ctrl-C): Prefect's "Crash detected!"
    and "Finished in state" lines of every task and flow run would come first. The command says it in one line;
    Prefect's run log (the API handler, not filtered) keeps them all."""

    def filter(self, record: logging.LogRecord) -> bool:
        from caseforge.runs import stop_requested

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
    """Around a command's flow runs: Prefect's terminal output without tracebacks (unless --debug; Prefect's
    run log keeps them), and the Prefect server the flows report to (caseforge.flows.common.prefect_api:
    the user's PREFECT_API_URL, else the shared local server, started in the background when none is up)."""
    import prefect.main  # noqa: F401  (Prefect sets its logging handlers up when imported)

    from caseforge.flows.common import caseforge_logs_in_prefect, prefect_api

    caseforge_logs_in_prefect()        # progress lines on the terminal and in the run log, past Prefect's WARNING root
    terminal_tracebacks(SHOW_TRACEBACKS)
    quiet_once_stopped()
    with prefect_api():
        yield


def run_flow(flow, **kwargs) -> dict:
    """Run `flow` locally; print its counters; return its report. CommandFailed (one line per problem)
    when it failed, quarantined data or crashed."""
    from caseforge.flows.common import FlowCrashed, report_of

    with flows_session():
        state = flow(**kwargs, return_state=True)
    sys.stdout.flush()
    try:
        report = report_of(state)
    except FlowCrashed as exc:
        raise CommandFailed([f"{flow.name} crashed: {exc}"]) from exc
    counts = ", ".join(f"{k}={v}" for k, v in sorted(report["counts"].items()))
    print(f"{report['name']} (run {report['run_id']}): {counts}")
    if not state.is_completed():
        reasons = report["failures"] or [state.message or "failed"]
        if len(reasons) > MAX_REASONS_PRINTED:
            extra = len(reasons) - MAX_REASONS_PRINTED
            reasons = reasons[:MAX_REASONS_PRINTED] + [f"…and {extra} more (see `caseforge sql` on ops.quarantine)"]
        report["problems"] = reasons
    return report


def finish(report: dict) -> int:
    """Exit status of a command whose flow report `run_flow` returned."""
    if report.get("problems"):
        raise CommandFailed(report["problems"])
    return 0


def jsonable(value):
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    return value


def print_rows(columns: list[str], rows: list[tuple], fmt: str, out=None) -> None:
    out = out or sys.stdout
    if fmt == "json":
        json.dump([{c: jsonable(v) for c, v in zip(columns, row)} for row in rows], out,
                  ensure_ascii=False, default=str, indent=1)
        out.write("\n")
    elif fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(columns)
        writer.writerows([[jsonable(v) for v in row] for row in rows])
    else:
        cells = [[("NULL" if v is None else str(jsonable(v))).replace("\n", " ") for v in row] for row in rows]
        cells = [[c if len(c) <= 80 else c[:77] + "..." for c in row] for row in cells]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
        out.write(" | ".join(c.ljust(w) for c, w in zip(columns, widths)) + "\n")
        out.write("-+-".join("-" * w for w in widths) + "\n")
        for row in cells:
            out.write(" | ".join(c.ljust(w) for c, w in zip(row, widths)) + "\n")
        out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")
