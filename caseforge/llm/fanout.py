"""Fan-out, the orchestrator's side: one LLM job answered by shard flow runs on a worker pool (`[fanout] pool`),
merged into ops.llm_calls as each one finishes. The workers and this process share nothing but the Prefect API and
a shard store (caseforge.store). The steps (store check, split, submit, watch, resubmit, merge) are in docs/llm.md,
"Fan-out: shards on the GPU pool". This module imports no Prefect: the flows layer installs the `ShardRuns` that
submits and watches flow runs (caseforge.flows.wiring.install()); with a pool configured and nothing installed, a
job refuses to run.
"""
from __future__ import annotations

import hashlib
import logging
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import duckdb
import pyarrow as pa
from pydantic import BaseModel

from caseforge.artifacts import publish_table
from caseforge.llm.cache import cached_identities
from caseforge.llm.shards import ANSWERS, Shard, answered, merge_rows, split_requests
from caseforge.llm.types import LLMRequest
from caseforge.outputs import check_output_path
from caseforge.settings import load_settings
from caseforge.settings_tables import FanoutTable
from caseforge.store import Store, StoreError, endpoint_from_environment, is_loopback_url, open_store
from caseforge.warehouse.statements import sql_text

log = logging.getLogger(__name__)

# what a shard run is doing: queued (no worker has it), starting (a worker took it and starts its process,
# container or pod), running, or ended
WAITING, STARTING, RUNNING, COMPLETED, FAILED = "waiting", "starting", "running", "completed", "failed"
ENDPOINT_OPTION = "base_url"


def store_endpoint(table: FanoutTable, named: str | None = None) -> str | None:
    """The shard store's S3 endpoint on this machine, decided here for the orchestrator and its workers alike:
    this machine's `[fanout] store_endpoint_url`, else its AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, else (a worker)
    the endpoint the shard run names (`named`: the orchestrator's, never one on its loopback)."""
    return table.store_endpoint_url or endpoint_from_environment() or named or None


class ShardRuns(Protocol):
    """How shards become runs on the pool (installed by the flows layer)."""

    def submit(self, deployment: str, pool: str, parameters: dict, name: str) -> str:
        """Start one run of `deployment` (which must be on `pool`); returns its id."""

    def state(self, run_id: str) -> tuple[str, str]:
        """(WAITING | STARTING | RUNNING | COMPLETED | FAILED, a message; for a failed run, why, as its
        worker reported it)."""

    def heartbeat(self, run_id: str) -> str | None:
        """A token of the run's newest heartbeat (changes with each beat; None: none yet)."""

    def pool_ready(self, pool: str) -> bool | None:
        """Whether a worker is polling the pool (None: cannot tell)."""

    def cancel(self, run_id: str, reason: str) -> None:
        """A run this job no longer waits for: cancel it (best effort)."""

    def mark_crashed(self, run_id: str, reason: str) -> None:
        """A run whose worker went silent: record it as crashed (best effort)."""


_runs: ShardRuns | None = None


def install(runs: ShardRuns | None) -> None:
    """Route shard runs of this process to `runs` (None: fan-out unavailable)."""
    global _runs
    _runs = runs


def installed() -> ShardRuns | None:
    return _runs


def options_for_workers(choice) -> dict:
    """The options of a choice a worker is given: not paths or keys (each machine has its own), and not an
    endpoint on this machine's loopback (on a worker that is the worker itself: it names its own)."""
    return {k: v for k, v in choice.identity()["options"].items()
            if not (k == ENDPOINT_OPTION and is_loopback_url(str(v)))}


@dataclass
class Submission:
    run_id: str
    outcome: str = "running"       # "merged", or why the shard was submitted again or given up


@dataclass
class ShardReport:
    number: int
    identities: list[str]
    submissions: list[Submission] = field(default_factory=list)
    status: str = "running"        # merged | failed
    reason: str | None = None
    rows: int = 0
    worker: dict | None = None
    seconds: float = 0.0

    @property
    def worker_name(self) -> str:
        worker = self.worker or {}
        return str(worker.get("worker") or (f"{worker['host']}:{worker.get('pid')}" if "host" in worker else ""))

    def row(self) -> dict:
        return {"shard": self.number, "requests": len(self.identities), "status": self.status,
                "submissions": len(self.submissions), "rows": self.rows, "worker": self.worker_name,
                "seconds": round(self.seconds, 1), "runs": "; ".join(s.outcome for s in self.submissions)}


@dataclass
class FanoutReport:
    step: str
    deployment: str
    pool: str
    store: str
    shards: list[ShardReport] = field(default_factory=list)
    leftover_rows: int = 0         # answers of an earlier, stopped job merged first
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: dict = field(default_factory=dict)     # where the time went: check, leftovers, submit, wait

    def failed(self) -> dict[str, str]:
        """identity → why its shard was given up."""
        return {identity: f"shard {s.number} given up: {s.reason}" for s in self.shards if s.status == "failed"
                for identity in s.identities}


def answer_by_fanout(con: duckdb.DuckDBPyConnection, step: str, backend, pending: list[tuple[str, LLMRequest]],
                     output_model: type[BaseModel], max_attempts: int, refresh: bool = False,
                     settings: FanoutTable | None = None) -> FanoutReport | None:
    """Answer `pending` (identity, request) on the pool and merge the answers into ops.llm_calls. `settings`: the
    run's [fanout] (default: the current settings').

    None when the settings name no pool, or the backend was not chosen through the settings (a test double
    handed over directly): the caller answers in process."""
    settings = settings or load_settings().file.fanout
    if not settings.enabled or not pending:
        return None
    choice = getattr(backend, "choice", None)
    if choice is None:
        log.warning("llm %s: backend %s was not chosen through the settings; answered in process, not fanned out",
                    step, getattr(backend, "name", backend))
        return None
    runs = _runs
    if runs is None:
        raise RuntimeError(f"[fanout] pool = {settings.pool!r}, but nothing can submit shard runs in this process: "
                           "LLM steps fan out from caseforge's flows (caseforge.flows.wiring.install() installs it)")
    store = step_store(con, settings, step)
    started = time.monotonic()
    checked = open_store(store.url, store.endpoint_url, read_timeout_s=10.0)
    checked.check(timeout_s=settings.check_timeout_s)        # StoreError: one line, before any shard is submitted
    with _store_lock(store.url):
        job = _FanOut(con, step, choice, pending, output_model, max_attempts, settings, runs, store, refresh)
        job.report.seconds["check"] = round(time.monotonic() - started, 2)
        report = job.run()
    publish_table(f"llm-fanout-{step}", [s.row() for s in report.shards],
                  f"llm {step}: {len(report.shards)} shard(s) on pool {settings.pool}")
    return report


def step_store(con: duckdb.DuckDBPyConnection, settings: FanoutTable, step: str) -> Store:
    """<store>/<database>-<hash of host and path>/<step>: one prefix per database and step, so a stopped
    job's shards are found again by the next run of the same step. The default store is the folder
    llm-shards/ next to the database (one machine)."""
    database = con.execute(sql_text("llm/database_path.sql")).fetchone()[0]
    if settings.store:
        root = open_store(settings.store, store_endpoint(settings))
        if root.local and database:          # never inside the warehouse's own files (caseforge.outputs)
            check_output_path(root.root, load_settings(database), "the LLM shard store ([fanout] store)")
    elif database:
        root = open_store(Path(database).resolve().parent / "llm-shards")
    else:
        raise StoreError("[fanout] store must be set to fan out from an in-memory database")
    where = f"{socket.gethostname()}:{Path(database).resolve() if database else 'memory'}"
    name = f"{Path(database).stem if database else 'memory'}-{hashlib.sha256(where.encode()).hexdigest()[:8]}"
    return root.child(name).child(re.sub(r"[^A-Za-z0-9._-]+", "-", step))


_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _store_lock(url: str) -> threading.Lock:
    """One job at a time per step store (only this process writes the database, so a process lock does)."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(url, threading.Lock())


@dataclass
class _Live:
    """One shard while it is out on the pool."""

    report: ShardReport
    shard: Shard
    run_id: str = ""
    submitted_at: float = 0.0
    starting_at: float | None = None     # when a worker was first seen to have taken the run
    alive_at: float | None = None        # last time the run was seen to start running or a new heartbeat came
    last_beat: str | None = None
    completed_at: float | None = None
    started: float = 0.0


class _FanOut:
    def __init__(self, con, step, choice, pending, output_model, max_attempts, settings: FanoutTable,
                 runs: ShardRuns, store: Store, refresh: bool = False):
        self.refresh = refresh          # answers replace cached ones (kept in ops.llm_call_history)
        self.con, self.step, self.choice, self.output_model = con, step, choice, output_model
        self.pending, self.max_attempts, self.settings, self.runs, self.store = (
            pending, max_attempts, settings, runs, store)
        self.report = FanoutReport(step, settings.deployment, settings.pool, store.describe())
        self.no_worker_since: float | None = None
        self.job = uuid.uuid4().hex[:8]

    # --- the job -----------------------------------------------------------------------------------
    def run(self) -> FanoutReport:
        started = time.monotonic()
        pending = self._merge_leftovers(self.pending)
        self.report.seconds["leftovers"] = round(time.monotonic() - started, 2)
        started = time.monotonic()
        live = self._submit_all(pending)
        self.report.seconds["submit"] = round(time.monotonic() - started, 2)
        started = time.monotonic()
        try:
            while live:
                time.sleep(self.settings.poll_s)
                self._watch(live)
        except BaseException:
            for shard in live.values():
                self._quietly(self.runs.cancel, shard.run_id, f"the job of step {self.step} stopped")
            raise
        self.report.seconds["wait"] = round(time.monotonic() - started, 2)
        merged = sum(s.status == "merged" for s in self.report.shards)
        log.info("llm %s: %d of %d shard(s) merged on pool %s", self.step, merged, len(self.report.shards),
                 self.settings.pool)
        return self.report

    def _merge_leftovers(self, pending: list[tuple[str, LLMRequest]]) -> list[tuple[str, LLMRequest]]:
        """Answers an earlier job of this step left in the store (it stopped, or gave a shard up) are merged
        first: whole answers where a worker finished, else the parts saved so far."""
        names = self.store.list()
        shards = sorted({name.split("/", 1)[0] for name in names if "/" in name})
        if not shards:
            return pending
        for name in shards:
            shard = Shard(self.store, name)
            if f"{name}/{ANSWERS}" in names:
                rows, worker = shard.read_answers()
            else:
                rows, worker = shard.read_parts(), None
            self.report.leftover_rows += merge_rows(self.con, rows, self.output_model, worker, self.refresh).rows
            shard.remove()
        if self.refresh:        # every cached request has an answer: a refresh asks them all again
            return pending
        done = cached_identities(self.con, [identity for identity, _ in pending], ok_only=False)
        log.info("llm %s: merged %d answer(s) earlier jobs left in %s", self.step, self.report.leftover_rows,
                 self.store.describe())
        return [(identity, request) for identity, request in pending if identity not in done]

    def _submit_all(self, pending: list[tuple[str, LLMRequest]]) -> dict[int, _Live]:
        identity_of = {id(request): identity for identity, request in pending}
        live = {}
        count = max(1, min(self.settings.shards, len(pending) // self.settings.min_shard_requests))
        self.shard_count = count
        groups = split_requests([request for _, request in pending], self.choice.model, count)
        for number, group in enumerate(groups):
            if not group:
                continue
            shard = Shard(self.store, f"{self.job}-shard-{number:03d}")
            shard.write_requests(group)
            one = _Live(ShardReport(number, [identity_of[id(r)] for r in group]), shard, started=time.monotonic())
            self.report.shards.append(one.report)
            live[number] = one
        for one in live.values():
            self._submit(one)
        return live

    def _parameters(self, shard: Shard) -> dict:
        endpoint = self.store.endpoint_url
        return {"step": self.step, "store": shard.store.url, "shard": shard.name,
                "store_endpoint_url": None if is_loopback_url(endpoint) else endpoint,
                "backend": self.choice.backend, "model": self.choice.model,
                "options": options_for_workers(self.choice), "role": self.choice.role,
                "max_attempts": self.max_attempts}

    def _submit(self, shard: _Live) -> None:
        attempt = len(shard.report.submissions) + 1
        name = f"{self.step} shard {shard.report.number + 1}/{self.shard_count}" + (
            f" (submission {attempt})" if attempt > 1 else "")
        shard.run_id = self.runs.submit(self.settings.deployment, self.settings.pool, self._parameters(shard.shard),
                                        name)
        shard.report.submissions.append(Submission(shard.run_id))
        shard.submitted_at = time.monotonic()
        shard.starting_at = shard.alive_at = shard.last_beat = shard.completed_at = None
        log.info("llm %s: shard %d (%d requests) submitted as run %s", self.step, shard.report.number,
                 len(shard.report.identities), shard.run_id)

    # --- watching ----------------------------------------------------------------------------------
    def _watch(self, live: dict[int, _Live]) -> None:
        waiting = []
        for number, shard in list(live.items()):
            if shard.shard.has_answers():
                self._merge(live, shard)
                continue
            now = time.monotonic()
            state, message = self.runs.state(shard.run_id)
            if state == RUNNING:
                beat = self.runs.heartbeat(shard.run_id)
                if shard.alive_at is None or (beat is not None and beat != shard.last_beat):
                    shard.last_beat, shard.alive_at = beat, now
            if state == STARTING and shard.starting_at is None:
                shard.starting_at = now
            if state == COMPLETED:
                shard.completed_at = shard.completed_at or now
                if now - shard.completed_at > max(10.0, 3 * self.settings.poll_s):
                    self._recover(live, shard, "its run completed without writing the shard's answers")
            elif state == FAILED:
                self._recover(live, shard, f"its run ended: {message}")
            elif now - shard.submitted_at > self.settings.shard_timeout_s:
                self._quietly(self.runs.cancel, shard.run_id, "shard timeout")
                self._recover(live, shard, f"not done after shard_timeout_s = {self.settings.shard_timeout_s:g} s")
            elif shard.alive_at is not None and now - shard.alive_at > self.settings.stale_after_s:
                why = f"no flow-run heartbeat for {now - shard.alive_at:.0f} s (worker gone?)"
                self._quietly(self.runs.mark_crashed, shard.run_id, why)
                self._recover(live, shard, why)
            elif (shard.alive_at is None and shard.starting_at is not None
                  and now - shard.starting_at > self.settings.start_timeout_s):
                why = f"taken by a worker but not started within start_timeout_s = {self.settings.start_timeout_s:g} s"
                self._quietly(self.runs.mark_crashed, shard.run_id, why)
                self._recover(live, shard, why)
            elif shard.alive_at is None and shard.starting_at is None:
                waiting.append(shard)
        self._give_up_without_workers(live, waiting)

    def _give_up_without_workers(self, live: dict[int, _Live], waiting: list[_Live]) -> None:
        if not waiting:
            self.no_worker_since = None
            return
        ready = self.runs.pool_ready(self.settings.pool)
        if ready is not False:
            self.no_worker_since = None
            return
        now = time.monotonic()
        self.no_worker_since = self.no_worker_since or now
        if now - self.no_worker_since > self.settings.no_worker_timeout_s:
            why = f"no worker on pool {self.settings.pool} for {self.settings.no_worker_timeout_s:g} s"
            for shard in waiting:
                self._quietly(self.runs.cancel, shard.run_id, why)
                self._give_up(live, shard, why)

    def _recover(self, live: dict[int, _Live], shard: _Live, why: str) -> None:
        """A run that ended without its answers: merged all the same when the store holds them (a run marked
        Crashed after its worker saved everything), else submitted again."""
        if shard.shard.has_answers():
            log.info("llm %s: shard %d: %s, but its answers are in the store", self.step, shard.report.number, why)
            self._merge(live, shard, f"merged ({why}; answers in the store)")
            return
        parts = shard.shard.read_parts()
        if set(shard.report.identities) <= answered(parts):
            log.info("llm %s: shard %d: %s, but its saved parts answer every request", self.step,
                     shard.report.number, why)
            self._merge(live, shard, f"merged ({why}; every answer in the saved parts)", parts)
            return
        log.warning("llm %s: shard %d: %s", self.step, shard.report.number, why)
        self._again(live, shard, why)

    def _again(self, live: dict[int, _Live], shard: _Live, why: str) -> None:
        shard.report.submissions[-1].outcome = why
        if len(shard.report.submissions) >= self.settings.max_submissions:
            self._give_up(live, shard, f"{why} (after {len(shard.report.submissions)} submission(s))")
            return
        log.warning("llm %s: shard %d submitted again: %s", self.step, shard.report.number, why)
        self._submit(shard)

    def _give_up(self, live: dict[int, _Live], shard: _Live, why: str) -> None:
        log.error("llm %s: shard %d given up: %s", self.step, shard.report.number, why)
        shard.report.status, shard.report.reason = "failed", why
        shard.report.submissions[-1].outcome = why
        shard.report.seconds = time.monotonic() - shard.started
        shard.shard.store.delete(shard.shard.requests)     # its saved parts stay: the next run merges them
        live.pop(shard.report.number, None)

    def _merge(self, live: dict[int, _Live], shard: _Live, outcome_text: str = "merged",
               rows: pa.Table | None = None) -> None:
        worker = None
        if rows is None:
            rows, worker = shard.shard.read_answers()
        outcome = merge_rows(self.con, rows, self.output_model, worker, self.refresh)
        report = shard.report
        report.status, report.rows, report.worker = "merged", outcome.rows, outcome.worker
        report.submissions[-1].outcome = outcome_text
        report.seconds = time.monotonic() - shard.started
        self.report.calls += outcome.attempts
        self.report.prompt_tokens += outcome.prompt_tokens
        self.report.completion_tokens += outcome.completion_tokens
        shard.shard.remove()
        live.pop(report.number, None)
        log.info("llm %s: shard %d merged (%d rows, worker %s, %.1f s)", self.step, report.number, outcome.rows,
                 report.worker_name or "?", report.seconds)

    def _quietly(self, action, run_id: str, reason: str) -> None:
        try:
            action(run_id, reason)
        except Exception as exc:   # noqa: BLE001 - tidying the orchestrator's view must not stop the job
            log.warning("llm %s: could not update run %s (%s): %s", self.step, run_id, reason, exc)

