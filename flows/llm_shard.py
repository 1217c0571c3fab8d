"""Prefect side of fanning an LLM step out: the shard flow a GPU worker runs, and the runs the orchestrator
submits and watches.

`llm_shard_flow` (deployment `llm-shard/gpu` in deployments/prefect.yaml, pool `caseforge-gpu`) answers one
request shard: the worker never opens the warehouse; it reads a request shard (JSONL; each request carries
its step's JSON schema, which the answers are checked against) and writes the answers as a Parquet shard
next to it, touching a heartbeat file meanwhile. `PrefectShardRuns` is what caseforge.llm.fanout submits
those runs with (`run_deployment(..., timeout=0)`) and reads their states through; caseforge.flows.common
installs it.
"""
from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from uuid import UUID

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import StateType, WorkPoolStatus
from prefect.deployments import run_deployment
from prefect.runtime import flow_run as current_flow_run
from prefect.settings import PREFECT_API_URL
from prefect.states import Cancelled, Cancelling, Crashed

from caseforge.flows.local_server import URL_ENV as LOCAL_URL_ENV
from caseforge.llm import fanout
from caseforge.llm.config import backend_for, llm_choice
from caseforge.llm.shards import run_shard

log = logging.getLogger(__name__)


@task(name="llm-shard-answer", cache_policy=NO_CACHE)
def answer_shard(step: str, request_file: str, backend: str | None, model: str | None, options: dict,
                 max_attempts: int, role: str = "generator", heartbeat_s: float = 5.0) -> dict:
    """The choice comes from the orchestrator (backend, model, options without paths and keys); paths and
    keys come from this machine's settings and environment."""
    choice = llm_choice(step=step, role=role, backend=backend, model=model, **options)
    # a process worker hands its name to the flow runs it starts; other workers' runs name their host
    worker = {"flow_run_id": current_flow_run.id,
              "worker": os.environ.get("PREFECT__WORKER_NAME") or socket.gethostname()}
    parquet_path, result = run_shard(step, backend_for(choice), Path(request_file), max_attempts,
                                     heartbeat_s=heartbeat_s, worker=worker)
    return {"parquet": str(parquet_path), **result.counts()}


@flow(name="llm-shard")
def llm_shard_flow(step: str, request_file: str, backend: str | None = None, model: str | None = None,
                   options: dict | None = None, max_attempts: int = 3, role: str = "generator",
                   heartbeat_s: float = 5.0) -> dict:
    """`request_file`: a path the worker can read and write beside (the shared shard folder)."""
    counts = answer_shard(step, request_file, backend, model, options or {}, max_attempts, role, heartbeat_s)
    get_run_logger().info("llm shard %s: %s", request_file, counts)
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
        return _STATES.get(state.type, fanout.WAITING), f"{state.type.value.lower()}: {state.message or ''}".strip()

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
