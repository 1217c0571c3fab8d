"""Prefect side of fanning an LLM step out: the shard flow a GPU worker runs, and the runs the orchestrator
submits and watches.

`llm_shard_flow` (deployment `llm-shard/gpu` in deployments/prefect.yaml, entrypoint
`caseforge.flows.llm_shard.llm_shard_flow`: the module of the worker's own installed caseforge, wherever its
checkout is) answers one shard of the shard store (caseforge.llm.worker): it reads the shard's requests from
the store, saves its answers there as they come and whole at the end, and never opens the warehouse or
anything else of the orchestrator's. `PrefectShardRuns` is what caseforge.llm.fanout submits those runs with
(`run_deployment(..., timeout=0)`) and watches them through: their states, their flow-run heartbeats
(Prefect's `prefect.flow-run.heartbeat` events, every PREFECT_FLOWS_HEARTBEAT_FREQUENCY seconds) and, for a
run that failed or crashed, the error its worker logged. caseforge.flows.wiring.install() installs it.
"""
from __future__ import annotations

import logging
import os
import socket
from datetime import datetime, timedelta, timezone
from uuid import UUID

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId, LogFilterLevel
from prefect.client.schemas.objects import StateType, WorkPoolStatus
from prefect.client.schemas.sorting import LogSort
from prefect.deployments import run_deployment
from prefect.runtime import flow_run as current_flow_run
from prefect.settings import PREFECT_API_URL
from prefect.states import Cancelled, Cancelling, Crashed

from caseforge.runtime.local_server import URL_ENV as LOCAL_URL_ENV
from caseforge.llm import fanout
from caseforge.llm.worker import answer_shard as answer_on_this_machine
from caseforge.llm.worker import worker_store
from caseforge.settings import load_settings, using

log = logging.getLogger(__name__)
HEARTBEAT_EVENT = "prefect.flow-run.heartbeat"


@task(name="llm-shard-answer", cache_policy=NO_CACHE)
def answer_shard(step: str, store: str, shard: str, backend: str | None, model: str | None, options: dict,
                 max_attempts: int, role: str = "generator", store_endpoint_url: str | None = None) -> dict:
    """The choice comes from the orchestrator (backend, model, options without paths, keys and loopback
    endpoints); paths, keys, endpoints and the store's credentials come from this machine's settings (the flow
    run's, read once) and environment."""
    settings = load_settings()
    shard_store = worker_store(settings, store, store_endpoint_url)    # CASEFORGE_FANOUT_STORE bounds where it goes
    shard_store.check(write=False)         # a store this machine cannot use: one line in the run's log
    # a process worker hands its name to the flow runs it starts; other workers' runs name their host
    worker = {"flow_run_id": current_flow_run.id,
              "worker": os.environ.get("PREFECT__WORKER_NAME") or socket.gethostname()}
    return answer_on_this_machine(settings, step, shard_store, shard, backend, model, options, max_attempts, role,
                                  worker)


@flow(name="llm-shard")
def llm_shard_flow(step: str, store: str, shard: str, backend: str | None = None, model: str | None = None,
                   options: dict | None = None, max_attempts: int = 3, role: str = "generator",
                   store_endpoint_url: str | None = None) -> dict:
    """`store`: the step's shard store (a URL, or a folder this machine sees); `shard`: the shard's prefix. This
    machine's settings are read once, here, and are the current ones for the run's task."""
    with using(load_settings()):
        counts = answer_shard(step, store, shard, backend, model, options or {}, max_attempts, role,
                              store_endpoint_url)
    get_run_logger().info("llm shard %s/%s: %s", store, shard, counts)
    return counts


_STATES = {
    StateType.SCHEDULED: fanout.WAITING, StateType.PAUSED: fanout.WAITING, StateType.PENDING: fanout.STARTING,
    StateType.RUNNING: fanout.RUNNING, StateType.CANCELLING: fanout.RUNNING,
    StateType.COMPLETED: fanout.COMPLETED,
    StateType.FAILED: fanout.FAILED, StateType.CRASHED: fanout.FAILED, StateType.CANCELLED: fanout.FAILED,
}


class PrefectShardRuns:
    """Shard runs as flow runs of a deployment on a Prefect server (PREFECT_API_URL)."""

    def __init__(self):
        self._checked: set[tuple[str, str]] = set()

    def _check(self, deployment: str, pool: str) -> None:
        if (deployment, pool) in self._checked:
            return
        url = PREFECT_API_URL.value()
        if not url or url == os.environ.get(LOCAL_URL_ENV):
            raise RuntimeError("[fanout] needs a Prefect server with workers on the pool: set PREFECT_API_URL "
                               "(a local run, on caseforge's own local server or none, has no workers to fan "
                               "out to)")
        with get_client(sync_client=True) as client:
            found = client.read_deployment_by_name(deployment)
        if found.work_pool_name != pool:
            raise RuntimeError(f"deployment {deployment} runs on pool {found.work_pool_name!r}, but [fanout] pool "
                               f"is {pool!r}: deploy it on that pool (deployments/prefect.yaml) or fix the settings")
        self._checked.add((deployment, pool))

    def submit(self, deployment: str, pool: str, parameters: dict, name: str) -> str:
        self._check(deployment, pool)
        run = run_deployment(deployment, parameters=parameters, flow_run_name=name, timeout=0, as_subflow=False,
                             tags=["llm-shard"])
        return str(run.id)

    def state(self, run_id: str) -> tuple[str, str]:
        with get_client(sync_client=True) as client:
            state = client.read_flow_run(UUID(run_id)).state
            if state is None:
                return fanout.WAITING, "no state yet"
            kind = _STATES.get(state.type, fanout.WAITING)
            message = f"{state.type.value.lower()}: {state.message or ''}".strip()
            if kind == fanout.FAILED:
                reason = worker_reason(client, run_id)
                if reason and reason not in message:
                    message += f"; the run's log says: {reason}"
        return kind, message

    def heartbeat(self, run_id: str) -> str | None:
        from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter, EventResourceFilter

        now = datetime.now(timezone.utc)          # a worker's clock may run ahead of this one: wide window
        wanted = EventFilter(occurred=EventOccurredFilter(since=now - timedelta(days=1), until=now + timedelta(days=1)),
                             event=EventNameFilter(name=[HEARTBEAT_EVENT]),
                             resource=EventResourceFilter(id=[f"prefect.flow-run.{run_id}"]))
        with get_client(sync_client=True) as client:
            page = client.read_events(filter=wanted, limit=1)
        return str(page.events[0].id) if page.events else None

    def pool_ready(self, pool: str) -> bool | None:
        with get_client(sync_client=True) as client:
            status = client.read_work_pool(pool).status
        return None if status is None else status == WorkPoolStatus.READY

    def cancel(self, run_id: str, reason: str) -> None:
        with get_client(sync_client=True) as client:
            state = client.read_flow_run(UUID(run_id)).state
            if state is None or state.is_final():
                return
            new = Cancelling(message=reason) if state.is_running() else Cancelled(message=reason)
            client.set_flow_run_state(run_id, new, force=True)

    def mark_crashed(self, run_id: str, reason: str) -> None:
        with get_client(sync_client=True) as client:
            state = client.read_flow_run(UUID(run_id)).state
            if state is not None and not state.is_final():
                client.set_flow_run_state(run_id, Crashed(message=reason), force=True)


def worker_reason(client, run_id: str, limit: int = 20) -> str:
    """The newest error a failed run's worker or process logged to the server (its last line of substance),
    '' when none: what the orchestrator's log shows next to "Process exited with status code: 1"."""
    records = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[UUID(run_id)]),
                                                    level=LogFilterLevel(ge_=logging.ERROR)),
                               sort=LogSort.TIMESTAMP_DESC, limit=limit)
    for record in records:
        lines = [line.strip() for line in (record.message or "").splitlines() if line.strip()]
        if not lines or lines[0].startswith("Process") and "exited with status code" in lines[0]:
            continue
        # a traceback: its last line says what went wrong
        return (lines[-1] if lines[0].startswith(("Traceback", "Engine execution")) or len(lines) > 1 else lines[0])[:400]
    return ""
