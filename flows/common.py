"""What every flow shares: caseforge.artifacts published as Prefect artifacts, LLM steps fanned out as
Prefect flow runs when the settings name a worker pool, plain steps made into tasks, the final state a flow
returns, and reading that state back."""
from __future__ import annotations

import dataclasses
import logging
import os
import subprocess
import sys

from prefect import task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext, TaskRunContext
from prefect.logging.handlers import APILogHandler
from prefect.states import Completed, Failed

from caseforge import artifacts
from caseforge.flows.llm_shard import PrefectShardRuns
from caseforge.llm import fanout
from caseforge.progress import LOGGER_ROOT, show_caseforge_logs
from caseforge.runs import StageReport


class RunLogHandler(APILogHandler):
    """Prefect's API handler, silent outside a flow or task run (a caseforge line logged by a test or a
    plain function call has no run log to go to; Prefect's own handler would warn about each)."""

    def emit(self, record: logging.LogRecord) -> None:
        if (getattr(record, "flow_run_id", None) is None and FlowRunContext.get() is None
                and TaskRunContext.get() is None):
            return
        super().emit(record)


def caseforge_logs_in_prefect() -> None:
    """caseforge's INFO lines (progress of every long stage) in the flow run's log and on the terminal.

    Prefect sets the root logger to WARNING when it is imported, so without this they reach neither.
    caseforge.flows sets PREFECT_LOGGING_EXTRA_LOGGERS=caseforge, which gives the "caseforge" logger
    Prefect's API handler when Prefect is first imported after it; a process that imported Prefect earlier
    (a worker's flow run) gets the handler here. Idempotent."""
    logger = logging.getLogger(LOGGER_ROOT)
    if not any(isinstance(handler, APILogHandler) for handler in logger.handlers):
        logger.addHandler(RunLogHandler())
    show_caseforge_logs()


caseforge_logs_in_prefect()


class PrefectArtifacts:
    """caseforge.artifacts → Prefect artifacts, inside a flow or task run only (elsewhere: nothing)."""

    @staticmethod
    def _inside_a_run() -> bool:
        return FlowRunContext.get() is not None or TaskRunContext.get() is not None

    def table(self, key: str, rows: list[dict], description: str) -> None:
        if self._inside_a_run():
            create_table_artifact(key=key, table=rows or [{"": "no rows"}], description=description)

    def markdown(self, key: str, markdown: str, description: str) -> None:
        if self._inside_a_run():
            create_markdown_artifact(key=key, markdown=markdown, description=description)

    def link(self, key: str, link: str, description: str) -> None:
        if self._inside_a_run():
            create_link_artifact(key=key, link=link, description=description)


artifacts.install(PrefectArtifacts())
fanout.install(PrefectShardRuns())


def as_tasks(steps, prefix: str):
    """A steps dataclass whose every step runs as its own Prefect task run, named <prefix>-<step>."""
    return dataclasses.replace(steps, **{
        field.name: task(name=f"{prefix}-{field.name.replace('_', '-')}", cache_policy=NO_CACHE)(
            getattr(steps, field.name))
        for field in dataclasses.fields(steps)})


def final_state(report: StageReport):
    """Completed when everything landed, Failed (with the report as data) otherwise."""
    data = report.to_dict()
    if report.ok:
        return Completed(message=f"{report.name}: ok", data=data)
    return Failed(message=f"{report.name}: {report.status}: {len(report.failures)} problem(s)", data=data)


class FlowCrashed(RuntimeError):
    """A flow ended without a report: an exception escaped it."""


def report_of(state) -> dict:
    """The report dict a flow's final state carries; FlowCrashed with the reason when it carries none."""
    data = state.result(raise_on_failure=False)
    if isinstance(data, BaseException):
        raise FlowCrashed(f"{type(data).__name__}: {data}")
    if not isinstance(data, dict):
        raise FlowCrashed(f"flow ended {state.type.value.lower()} without a report: {state.message or data!r}")
    return data


# --- Prefect's temporary server dies with the process that started it ---

# Run as `python -c WATCHDOG PIPE PIDFD PID`: waits until either the server ends (its pidfd turns readable)
# or the caseforge process is gone (the pipe's only write end, held by that process, is closed by the
# kernel however the process ended, SIGKILL included); then stops the server (SIGTERM, SIGKILL after 10 s).
# Standard library only, so it costs a bare interpreter, not caseforge's imports.
WATCHDOG = """
import os, select, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C and a closed terminal end caseforge, not this
signal.signal(signal.SIGHUP, signal.SIG_IGN)
pipe, pidfd, pid = map(int, sys.argv[1:4])

def server_ended(timeout):
    if pidfd >= 0:
        return bool(select.select([pidfd], [], [], timeout)[0])
    time.sleep(timeout)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False

while True:
    ready = select.select([pipe] + ([pidfd] if pidfd >= 0 else []), [], [], None if pidfd >= 0 else 1.0)[0]
    if pidfd in ready or (pidfd < 0 and server_ended(0)):
        sys.exit(0)
    if pipe in ready:
        break

def send(sig):
    try:
        signal.pidfd_send_signal(pidfd, sig) if pidfd >= 0 else os.kill(pid, sig)
    except ProcessLookupError:
        pass

send(signal.SIGTERM)
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    if server_ended(0.2):
        sys.exit(0)
send(signal.SIGKILL)
"""

_GUARDED: dict[int, int] = {}      # server pid -> the write end of its watchdog's pipe (kept open until exit)


def guard_ephemeral_server() -> None:
    """Start Prefect's temporary local server now, as the first flow run would, and make sure it does not
    outlive this process.

    Prefect 3.8.8 (prefect.server.api.server.SubprocessASGIServer) starts it as a child `uvicorn`
    process and stops it from an atexit hook, which never runs when the process is killed: each killed
    command left a server (about 200 MB) behind. A small watchdog process holds the read end of a pipe
    whose only write end this process holds; when this process ends, however it ends, the kernel closes
    that end and the watchdog stops the server. With PREFECT_API_URL set there is no temporary server and
    nothing to do."""
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return
    server = SubprocessASGIServer()
    server.start()
    process = server.server_process
    if process is None or process.pid in _GUARDED or process.poll() is not None:
        return
    read_end, write_end = os.pipe()         # neither end is inherited by other children
    try:
        pidfd = os.pidfd_open(process.pid) if hasattr(os, "pidfd_open") else -1
    except OSError:
        pidfd = -1                          # kernel before 5.3: the watchdog polls the pid instead
    try:
        subprocess.Popen([sys.executable, "-c", WATCHDOG, str(read_end), str(pidfd), str(process.pid)],
                         pass_fds=[fd for fd in (read_end, pidfd) if fd >= 0], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        os.close(read_end)
        if pidfd >= 0:
            os.close(pidfd)
    _GUARDED[process.pid] = write_end
