"""The worker side of a fan-out: answer one shard of a shard store (caseforge.llm.shards) on this machine.

A worker needs the store's URL (credentials from its own environment), its model (endpoint or files, from
its own settings and environment) and nothing of the orchestrator's: no folder, no warehouse. It keeps its
answers in a database in memory, saves each batch to the store as a part the moment it is saved, and writes
the shard's answers whole at the end. A resubmitted shard starts from the parts earlier runs saved and asks
only the rest (answers no endpoint gave, 'unanswered', are asked again).

Both take this machine's settings, read once by the shard's flow run (flows/llm_shard.py). `worker_choice` resolves
what the orchestrator chose into this machine's terms: paths and keys never come from the orchestrator, and
neither does an endpoint this machine names itself (CASEFORGE_OPENAI_BASE_URL or base_url in its settings file);
the orchestrator never ships an endpoint on its own loopback. `worker_store` does the same for the store: its
endpoint is this machine's (caseforge.llm.fanout.store_endpoint), and a worker whose settings name its store
(CASEFORGE_FANOUT_STORE, a kubernetes pool's `store` job variable) opens that one and takes from the run's
parameters only the shard's place in it.
"""
from __future__ import annotations

import logging
import os
import socket
import uuid

from caseforge.llm.cache import store_calls
from caseforge.llm.config import LLMChoice, backend_for, llm_choice, with_endpoint
from caseforge.llm.fanout import store_endpoint
from caseforge.llm.jobs import run_job
from caseforge.llm.shards import Shard, answered, rows_bytes, shard_output_model
from caseforge.llm.types import JobResult
from caseforge.settings import Settings
from caseforge.store import Store, StoreError, open_store
from caseforge.warehouse.connection import connect
from caseforge.warehouse.statements import sql_text

log = logging.getLogger(__name__)

ENDPOINT_OPTION = "base_url"


def this_worker() -> dict:
    """Who answers a shard: host, process and its parent (a process worker starts one process per flow run)."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "ppid": os.getppid()}


def worker_choice(settings: Settings, step: str, role: str, backend: str | None, model: str | None,
                  options: dict) -> LLMChoice:
    """The orchestrator's choice (backend, model, options without paths and keys) on this machine: its own
    settings give paths, keys, and the endpoint when they name one; else the orchestrator's endpoint."""
    shipped = {k: v for k, v in options.items() if k != ENDPOINT_OPTION}
    choice = llm_choice(settings, step, role, backend, model, **shipped)
    return with_endpoint(choice, options.get(ENDPOINT_OPTION))


def worker_store(settings: Settings, url: str, endpoint_url: str | None = None) -> Store:
    """The store a shard run names (`url`: the step's prefix in the orchestrator's store; `endpoint_url`: the
    orchestrator's endpoint, used when this machine names none), opened on this machine. When this machine's
    settings name its store (CASEFORGE_FANOUT_STORE), that store is opened instead, and `url` must lie inside it:
    a run never makes a worker read or write anywhere else (StoreError, one line)."""
    endpoint = store_endpoint(settings.file.fanout, endpoint_url)
    named = open_store(url, endpoint)
    configured = settings.fanout_store.strip()
    if not configured:
        return named
    root = open_store(configured, endpoint)
    inside = named.url == root.url or named.url.startswith(root.url.rstrip("/") + "/")
    if not inside or type(named.fs) is not type(root.fs):
        raise StoreError(f"this worker answers shards of the store {root.url} (CASEFORGE_FANOUT_STORE in its "
                         f"environment), but this shard is in {named.url}: point the orchestrator's [fanout] store "
                         f"and the pool's store at the same place")
    relative = named.url[len(root.url):].strip("/")
    return root.child(relative) if relative else root


def run_shard(step: str, backend, shard: Shard, max_attempts: int = 3, worker: dict | None = None
              ) -> tuple[str, JobResult]:
    """Answer one shard: resume from its parts, save every batch as a part, write its answers whole.
    Returns the answers' name in the store and the job's result. Never fans out again, never re-asks a
    failure an earlier run of the shard recorded."""
    worker = {**this_worker(), **(worker or {})}
    requests = shard.read_requests()
    run = uuid.uuid4().hex[:12]
    saved = 0
    con = connect(":memory:")
    try:
        earlier = shard.read_parts()
        if earlier.num_rows:
            store_calls(con, earlier)
            log.info("llm %s: shard %s resumes: %d of %d request(s) answered by earlier runs", step, shard.name,
                     len(answered(earlier)), len(requests))

        def save(rows) -> None:
            nonlocal saved
            saved += 1
            shard.store.put(shard.part(run, saved), rows_bytes(rows, worker))

        result = run_job(con, step, backend, requests, shard_output_model(requests), max_attempts,
                         retry_failed=False, fanout=False, on_saved=save)
        rows = con.execute(sql_text("llm/shard_rows.sql")).fetch_arrow_table()
    finally:
        con.close()
    shard.store.put(shard.answers, rows_bytes(rows, worker))
    return shard.answers, result


def answer_shard(settings: Settings, step: str, store: Store, shard_name: str, backend: str | None,
                 model: str | None, options: dict, max_attempts: int, role: str = "generator",
                 worker: dict | None = None) -> dict:
    """What the shard flow run does (flows/llm_shard.py): the backend this machine makes of the orchestrator's
    choice answers the shard. Returns the job's counts and where the answers are."""
    choice = worker_choice(settings, step, role, backend, model, options)
    name, result = run_shard(step, backend_for(choice), Shard(store, shard_name), max_attempts, worker)
    return {"answers": f"{store.url}/{name}", **result.counts()}
