"""What every flow shares: caseforge.artifacts published as Prefect artifacts, LLM steps fanned out as
Prefect flow runs when the settings name a worker pool, plain steps made into tasks, the final state a flow
returns, and reading that state back."""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import signal
import subprocess
import sys

from prefect import task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext, TaskRunContext
from prefect.logging.handlers import APILogHandler
from prefect.states import Cancelled, Completed, Failed, State

from caseforge import artifacts, fetch, stopping
from caseforge.flows.llm_shard import PrefectShardRuns
from caseforge.llm import fanout
from caseforge.progress import LOGGER_ROOT, show_caseforge_logs
from caseforge.stage_report import StageReport
from caseforge.stopping import RunStopped, StopRequest, stop_of


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


class PrefectHostSlots:
    """caseforge.fetch's per-host slot → one slot of the Prefect global concurrency limit `upstream-<host>`
    (deployments/setup.sh creates them), held while a fetcher talks to that host, so that at most that many
    runs on any worker fetch from one host at once. Only inside a flow or task run against a Prefect server
    (PREFECT_API_URL set): a local run in ephemeral mode has no such limits and takes no slot. A limit the
    server does not have is skipped with Prefect's warning (strict=False), never an error."""

    def __call__(self, host: str):
        from prefect.settings import PREFECT_API_URL

        if not PREFECT_API_URL.value() or not PrefectArtifacts._inside_a_run():
            return contextlib.nullcontext()
        from prefect.concurrency.sync import concurrency

        return concurrency(host_limit_name(host), occupy=1, strict=False)


def host_limit_name(host: str) -> str:
    return f"upstream-{host}"


artifacts.install(PrefectArtifacts())
fanout.install(PrefectShardRuns())
fetch.install_host_slots(PrefectHostSlots())


def as_tasks(steps, prefix: str):
    """A steps dataclass whose every step runs as its own Prefect task run, named <prefix>-<step>."""
    return dataclasses.replace(steps, **{
        field.name: task(name=f"{prefix}-{field.name.replace('_', '-')}", cache_policy=NO_CACHE)(
            under_way(getattr(steps, field.name)))
        for field in dataclasses.fields(steps)})


class RunFailed(Exception):
    """What a Failed state this project returns carries as its data: the state's message and the report (a
    flow's report dict, or a nightly stage's outcome).

    Prefect turns a Failed state's data into an exception wherever the failure is raised
    (prefect.states.get_state_exception): in a process worker's flow-run process, `run_flow` asks the final
    state for its result that way. Data that is neither an exception, a string nor a state (the report dict
    these states used to carry) cannot be: Prefect raised `TypeError: Unexpected result for failed state:
    {...} —— dict cannot be resolved into an exception` there instead of the run's own failure. As an
    exception the report is raised as itself, and `report_of` reads it back."""

    def __init__(self, message: str, report):
        super().__init__(message, report)          # both in args: it pickles (result persistence)
        self.message = message
        self.report = report

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:              # Prefect logs a failed state with its data's repr: keep it short
        short = self.message if len(self.message) <= 300 else self.message[:300] + "…"
        return f"RunFailed({short!r})"


def failed_state(message: str, report):
    """A Failed state carrying `report` (see RunFailed)."""
    return Failed(message=message, data=RunFailed(message, report))


def final_state(report: StageReport):
    """Completed when everything landed, Failed (with the report as data) otherwise."""
    data = report.to_dict()
    if report.ok:
        return Completed(message=f"{report.name}: ok", data=data)
    return failed_state(f"{report.name}: {report.status}: {len(report.failures)} problem(s)", data)


class FlowCrashed(RuntimeError):
    """A flow ended without a report: an exception escaped it (`error`, when the state carries it)."""

    def __init__(self, message: str, error: BaseException | None = None):
        super().__init__(message)
        self.error = error


def report_of(state) -> dict:
    """The report dict a flow's final state carries; FlowCrashed with the reason when it carries none;
    RunStopped when the run was stopped (interrupted or cancelled)."""
    if state.is_cancelled():
        raise RunStopped(_stop_carried_by(state))
    data = state.result(raise_on_failure=False)
    if isinstance(data, RunFailed):
        data = data.report
    if isinstance(data, BaseException):
        raise FlowCrashed(f"{type(data).__name__}: {data}", data)
    if not isinstance(data, dict):
        raise FlowCrashed(f"flow ended {state.type.value.lower()} without a report: {state.message or data!r}")
    return data


# --- a run stopped by a signal or a cancellation ends Interrupted / Cancelled, in Prefect too ---

def _stop_carried_by(state) -> StopRequest:
    try:
        data = state.result(raise_on_failure=False)
    except Exception:                       # noqa: BLE001  (a cancellation of Prefect's own carries nothing)
        data = None
    if isinstance(data, RunStopped):
        return data.request
    return stopping.stop_requested() or StopRequest("cancelled", "a Prefect cancellation", 128 + signal.SIGTERM)


def stopped_state(request: StopRequest, carry: bool = True):
    """The state a stopped flow or nightly stage ends in: Cancelled, named Interrupted for a signal, with the
    runs this process recorded as stopped; `carry`: with the stop as its data (report_of raises it)."""
    name = "Interrupted" if request.state == "interrupted" else "Cancelled"
    return Cancelled(name=name, message=f"{request.reason}{stopping.stopped_note()}",
                     data=RunStopped(request) if carry else None)


def _prefect_owns_the_end() -> bool:
    """A SIGTERM by which Prefect's runner reschedules or hands the run on: Prefect proposes the next state."""
    from prefect._internal import control_listener

    return control_listener.get_intent() in ("reschedule", "relinquish")


_UNDER_WAY: dict[tuple, object] = {}     # (flow | task, run id) → the task run a subflow stands for, or None


def under_way(fn):
    """Under @flow or @task: while the run is in this function it is known as under way, and so is a run that
    ended stopped (Prefect's engine may not have reported its end yet), so a command that must leave without
    it (a thread stuck in a read) still ends it in Prefect (_mark_abandoned_runs)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        key, parent = _this_run()
        if key is not None:
            _UNDER_WAY[key] = parent
        ended = False
        try:
            result = fn(*args, **kwargs)
            ended = not (isinstance(result, State) and result.is_cancelled())
            return result
        except BaseException as exc:
            ended = stop_of(exc) is None
            raise
        finally:
            if ended:
                _UNDER_WAY.pop(key, None)
    return run


def ends_as_stopped(fn):
    """Under @flow (or a nightly stage's @task): a run stopped by SIGINT, SIGTERM or a Prefect cancellation ends
    in stopped_state instead of Crashed ("Execution was aborted by an interrupt signal")."""
    @functools.wraps(fn)
    @under_way
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BaseException as exc:
            request = stop_of(exc)
            if request is None or _prefect_owns_the_end():
                raise
            return stopped_state(request)
    return run


def _this_run() -> tuple[tuple | None, object]:
    """(("task" | "flow", id), parent task run id) of the run whose function is being called."""
    task_run, flow_run = TaskRunContext.get(), FlowRunContext.get()
    flow_run = flow_run.flow_run if flow_run is not None else None
    if task_run is not None and (flow_run is None or task_run.task_run.flow_run_id == flow_run.id):
        return ("task", task_run.task_run.id), None
    if flow_run is not None:                        # a flow, or a subflow called from a task of its parent
        return ("flow", flow_run.id), flow_run.parent_task_run_id
    return None, None


def _mark_abandoned_runs(request: StopRequest) -> None:
    """Before a stopped command leaves work behind: its flow and task runs still under way end in Prefect as
    they do in ops.runs (a subflow's stand-in task run of its parent too), not `Running` for ever."""
    from prefect.client.orchestration import get_client

    under_way = dict(_UNDER_WAY)
    if not under_way:
        return
    with get_client(sync_client=True) as client:
        for (kind, run_id), parent_task in under_way.items():
            if kind == "flow":
                client.set_flow_run_state(run_id, stopped_state(request, carry=False), force=True)
            if kind == "task" or parent_task:
                client.set_task_run_state(parent_task or run_id, stopped_state(request, carry=False), force=True)


stopping.also_before_leaving(_mark_abandoned_runs)


def _bridge_prefects_sigterm_handler() -> None:
    """Prefect's flow engine swaps its own SIGTERM handler in while a flow runs: it raises TerminationSignal,
    which Python loses when the signal lands in a finaliser (asyncio's transports have one: "Exception ignored",
    and the run went on). In its place (the module attribute every Prefect check reads, so cancellations are
    still acknowledged) a handler that first records the stop (caseforge.stopping.note_stop_signal; a cancellation
    announced by Prefect's runner is `cancelled`), so the run still stops at its next step, then raises
    TerminationSignal as Prefect's does."""
    from prefect._internal import control_listener
    from prefect.exceptions import TerminationSignal
    from prefect.utilities import engine as prefect_engine

    def caseforge_sigterm_handler(sig_num: int, *_frame) -> None:
        if stopping.note_stop_signal(sig_num, cancelled=control_listener.get_intent() == "cancel") is not None:
            raise TerminationSignal(signal=sig_num)

    prefect_engine._prefect_sigterm_handler = caseforge_sigterm_handler


_bridge_prefects_sigterm_handler()


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


# --- which Prefect server a command's flows talk to ---

def _identity() -> tuple[dict, str]:
    import prefect
    from prefect.settings import get_current_settings

    from caseforge.flows import local_server

    url = get_current_settings().server.database.connection_url
    url = url.get_secret_value() if hasattr(url, "get_secret_value") else str(url)
    return {"prefect_version": prefect.__version__, "database": local_server.database_key(url)}, prefect.__version__


def start_local_server(idle_s: float | None = None) -> tuple[dict, str]:
    """The local Prefect server of this PREFECT_HOME (caseforge.flows.local_server), started in the background
    if none is up: (its state, "reused" / "started" / "replaced stale" / "replaced unhealthy")."""
    from prefect.settings import PREFECT_HOME, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, get_current_settings

    from caseforge.flows import local_server

    def server_env() -> dict:               # only when starting one: the settings this process runs with
        env = {**os.environ, **get_current_settings().to_environment_variables(exclude_unset=True)}
        env.pop("PREFECT_API_URL", None)
        env.pop(local_server.URL_ENV, None)
        return env

    identity, version = _identity()
    return local_server.ensure(PREFECT_HOME.value(), identity, server_env,
                               idle_s if idle_s is not None else local_server.idle_timeout_s(),
                               float(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()), version)


def _drain_prefect_workers() -> None:
    """Send the log records and events still queued to the server before the command lets go of it."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        try:
            worker.drain_all(timeout=5)
        except Exception:                   # noqa: BLE001  (what could not be sent is Prefect's to log)
            pass


@contextlib.contextmanager
def prefect_api():
    """Where the flows run inside this block report to:

    - PREFECT_API_URL set by the user: that server, nothing changes;
    - otherwise (CASEFORGE_PREFECT_SERVER=local, the default) the local server of this PREFECT_HOME,
      started in the background when none is up and left running for later commands until idle; this
      process holds a lease on it until the block ends (caseforge.flows.local_server);
    - CASEFORGE_PREFECT_SERVER=ephemeral, or when the local server cannot be used (another Prefect version
      holds it, it failed to start; a warning says why): Prefect's temporary server, for this process only
      (guard_ephemeral_server)."""
    import prefect.context
    from prefect.settings import (PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, PREFECT_HOME,
                                  get_current_settings)

    from caseforge.flows import local_server

    if PREFECT_API_URL.value():
        yield None
        return
    lease = None
    try:
        if local_server.mode() == "local":
            lease = local_server.Lease(local_server.Paths.of(PREFECT_HOME.value()))
            state, _ = start_local_server()
        else:
            state = None
    except Exception as exc:                # noqa: BLE001  (the command runs anyway, on a temporary server)
        if lease is not None:
            lease.release()
            lease = None
        logging.getLogger("caseforge").warning("local Prefect server not used: %s; a temporary server for "
                                               "this command instead", exc)
        state = None
    if state is None:
        guard_ephemeral_server()
        yield None
        return
    saved = {name: os.environ.get(name) for name in ("PREFECT_API_URL", local_server.URL_ENV)}
    saved_global = prefect.context.GLOBAL_SETTINGS_CONTEXT
    os.environ["PREFECT_API_URL"] = os.environ[local_server.URL_ENV] = state["api_url"]   # child processes
    # This thread's settings and the global ones, which Prefect's background threads (logs, events) read.
    # Flow run heartbeats are off unless the user set them: the local server runs only the temporary
    # server's services, none of which watches heartbeats, and each flow run's end waited up to 1 s for
    # its heartbeat thread (Prefect 3.8.8 flow_engine._send_heartbeats sleeps in 1 s slices).
    current = get_current_settings()
    updates = {PREFECT_API_URL: state["api_url"]}
    if "heartbeat_frequency" not in current.flows.model_fields_set:
        updates[PREFECT_FLOWS_HEARTBEAT_FREQUENCY] = None
    settings = current.copy_with_update(updates=updates)
    context = prefect.context.SettingsContext(profile=saved_global.profile, settings=settings)
    prefect.context.GLOBAL_SETTINGS_CONTEXT = context
    try:
        with context:
            yield state
    finally:
        _drain_prefect_workers()
        prefect.context.GLOBAL_SETTINGS_CONTEXT = saved_global
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        lease.release()
