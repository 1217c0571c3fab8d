"""How the flows layer plugs Prefect into the core, done once by `install()` where a process enters the flows
(the command line's flows_session; a deployment's entry module in a worker's process): caseforge.artifacts
publish Prefect artifacts, caseforge.fetch takes a slot of the host's Prefect concurrency limit, LLM steps fan
out as flow runs of the shard deployment, caseforge's log lines reach the flow run's log, a command's flow run is
named for its run (`ingest-oyez-12`, `nightly-7`), and a command that must leave stopped work behind ends those
runs in Prefect too. Nothing here runs at import."""
from __future__ import annotations

import contextlib
import logging

from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.context import FlowRunContext, TaskRunContext
from prefect.logging.handlers import APILogHandler

from caseforge import artifacts, fetch, run_record, stopping
from caseforge.flows.llm_shard import PrefectShardRuns
from caseforge.flows.states import mark_abandoned_runs, name_flow_run, quiet_failed_state_records
from caseforge.llm import fanout
from caseforge.progress import LOGGER_ROOT, show_caseforge_logs


def install() -> None:
    """Wire Prefect in for this process (again, harmlessly: each piece replaces itself)."""
    artifacts.install(PrefectArtifacts())
    fanout.install(PrefectShardRuns())
    fetch.install_host_slots(PrefectHostSlots())
    caseforge_logs_in_prefect()
    stopping.also_before_leaving(mark_abandoned_runs)
    run_record.also_when_started(name_flow_run)
    quiet_failed_state_records()
    _bridge_prefects_sigterm_handler()


def _inside_a_run() -> bool:
    return FlowRunContext.get() is not None or TaskRunContext.get() is not None


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



class PrefectArtifacts:
    """caseforge.artifacts → Prefect artifacts, inside a flow or task run only (elsewhere: nothing)."""

    def table(self, key: str, rows: list[dict], description: str) -> None:
        if _inside_a_run():
            create_table_artifact(key=key, table=rows or [{"": "no rows"}], description=description)

    def markdown(self, key: str, markdown: str, description: str) -> None:
        if _inside_a_run():
            create_markdown_artifact(key=key, markdown=markdown, description=description)

    def link(self, key: str, link: str, description: str) -> None:
        if _inside_a_run():
            create_link_artifact(key=key, link=link, description=description)


class PrefectHostSlots:
    """caseforge.fetch's per-host slot → one slot of the Prefect global concurrency limit `upstream-<host>`
    (deployments/setup.sh creates them), held while a fetcher talks to that host, so that at most that many
    runs on any worker fetch from one host at once. Only inside a flow or task run against a Prefect server
    (PREFECT_API_URL set): a local run in ephemeral mode has no such limits and takes no slot. A limit the
    server does not have is skipped with Prefect's warning (strict=False), never an error."""

    def __call__(self, host: str):
        from prefect.settings import PREFECT_API_URL

        if not PREFECT_API_URL.value() or not _inside_a_run():
            return contextlib.nullcontext()
        from prefect.concurrency.sync import concurrency

        return concurrency(host_limit_name(host), occupy=1, strict=False)


def host_limit_name(host: str) -> str:
    return f"upstream-{host}"


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

    if getattr(prefect_engine._prefect_sigterm_handler, "caseforge", False):
        return                              # once: a flow running now compares the handler it installed with it

    def caseforge_sigterm_handler(sig_num: int, *_frame) -> None:
        if stopping.note_stop_signal(sig_num, cancelled=control_listener.get_intent() == "cancel") is not None:
            raise TerminationSignal(signal=sig_num)

    caseforge_sigterm_handler.caseforge = True
    # A patch of Prefect's internals, because Prefect 3.8.8 offers no hook for its SIGTERM handler (how 3.x flows
    # meet SIGTERM: PrefectHQ/prefect#14219, #14013): the flow engine installs this module attribute
    # (capture_sigterm) and tells a cancellation it may acknowledge by comparing the installed handler with it, so
    # only replacing the attribute keeps both working. tests/unit/test_stop_handler_reentry.py reads the attribute
    # and runs the bridge: a Prefect without it fails that test.
    prefect_engine._prefect_sigterm_handler = caseforge_sigterm_handler
