"""Fan-out: one LLM job answered by shard flow runs on a worker pool, merged here as each one finishes.

When the settings name a worker pool (`[fanout] pool`), `run_job` hands the requests it has no cached
answer for to `answer_by_fanout`:

1. they are split into `[fanout] shards` request files (a request always lands in the same shard: the hash
   of its identity) in a folder the workers can read and write (`shard_dir`, default `llm-shards/` next to
   the database), one folder per database and step;
2. one flow run of the `[fanout] deployment` (the `llm-shard` flow) is submitted per shard, with the
   backend, model and options this process chose for the step (paths and keys left out: a worker resolves
   those from its own settings and environment);
3. the shards are watched: a shard whose Parquet file appears is merged into ops.llm_calls at once (one
   shard, one transaction, one shard's rows in memory) and its files are removed; a shard whose flow run
   failed or crashed, whose heartbeat stopped changing for `stale_after_s` while it ran, or that ran past
   `shard_timeout_s`, is submitted again (the worker's work file lets the new run resume), at most
   `max_submissions` times in all (so is one a worker took but did not start within `start_timeout_s`:
   the worker died meanwhile, or its container cannot start); shards still waiting after `no_worker_timeout_s` with no worker on
   the pool are given up. A shard given up ends as recorded failures of its requests in the job result
   (not cached: the next run asks them again, resuming from the work file left in the shard folder);
4. run_job then reads every answer back from the cache.

This module imports no Prefect: the flows layer installs the `ShardRuns` that submits and watches flow runs
(caseforge.flows.llm_shard.PrefectShardRuns, installed by caseforge.flows.common), the way
caseforge.artifacts gets its publisher. With a pool configured and nothing installed, a job refuses to run
rather than quietly answering in process.
"""
from __future__ import annotations

import hashlib
import logging
import re
import socket
import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Protocol

import duckdb
from pydantic import BaseModel

from caseforge import settings_file
from caseforge.artifacts import publish_table
from caseforge.config import settings as load_settings
from caseforge.llm.jobs import cached_identities
from caseforge.llm.shards import (ShardFiles, merge_shard, read_heartbeat, split_requests,
                                  write_request_file)
from caseforge.llm.types import LLMRequest
from caseforge.outputs import check_output_path
from caseforge.warehouse import sql_text

log = logging.getLogger(__name__)

# what a shard run is doing: queued (no worker has it), starting (a worker took it and starts its process,
# container or pod), running, or ended
WAITING, STARTING, RUNNING, COMPLETED, FAILED = "waiting", "starting", "running", "completed", "failed"


@dataclass(frozen=True)
class FanoutSettings:
    """The `[fanout]` table of the settings (caseforge/defaults.toml documents each key)."""

    pool: str
    deployment: str = "llm-shard/gpu"
    shards: int = 4
    shard_dir: str = ""
    poll_s: float = 2.0
    heartbeat_s: float = 5.0
    stale_after_s: float = 120.0
    start_timeout_s: float = 900.0
    no_worker_timeout_s: float = 600.0
    shard_timeout_s: float = 21600.0
    max_submissions: int = 3

    @classmethod
    def from_settings(cls) -> "FanoutSettings | None":
        """The fan-out settings in force, or None when no pool is named (every job runs in process)."""
        table = settings_file.section("fanout")
        if not str(table.get("pool") or "").strip():
            return None
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(table) - set(known))
        if unknown:
            raise ValueError(f"[fanout]: unknown setting(s) {', '.join(unknown)}; known: {', '.join(known)}")
        kinds = {"pool": str, "deployment": str, "shard_dir": str, "shards": int, "max_submissions": int}
        values = {name: kinds.get(name, float)(value) for name, value in table.items()}
        chosen = cls(**values)
        if chosen.shards < 1 or chosen.max_submissions < 1:
            raise ValueError("[fanout]: shards and max_submissions must be at least 1")
        if "/" not in chosen.deployment:
            raise ValueError(f"[fanout] deployment must be 'flow name/deployment name', not {chosen.deployment!r}")
        return chosen


class ShardRuns(Protocol):
    """How shards become runs on the pool (installed by the flows layer)."""

    def submit(self, deployment: str, pool: str, parameters: dict, name: str) -> str:
        """Start one run of `deployment` (which must be on `pool`); returns its id."""

    def state(self, run_id: str) -> tuple[str, str]:
        """(WAITING | STARTING | RUNNING | COMPLETED | FAILED, a message)."""

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
    folder: str
    shards: list[ShardReport] = field(default_factory=list)
    leftover_rows: int = 0         # answers of an earlier, stopped job merged first
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def failed(self) -> dict[str, str]:
        """identity → why its shard was given up."""
        return {identity: f"shard {s.number} given up: {s.reason}" for s in self.shards if s.status == "failed"
                for identity in s.identities}


def answer_by_fanout(con: duckdb.DuckDBPyConnection, step: str, backend, pending: list[tuple[str, LLMRequest]],
                     output_model: type[BaseModel], max_attempts: int) -> FanoutReport | None:
    """Answer `pending` (identity, request) on the pool and merge the answers into ops.llm_calls.

    None when the settings name no pool, or the backend was not chosen through the settings (a test double
    handed over directly): the caller answers in process."""
    settings = FanoutSettings.from_settings()
    if settings is None or not pending:
        return None
    choice = getattr(backend, "choice", None)
    if choice is None:
        log.warning("llm %s: backend %s was not chosen through the settings; answered in process, not fanned out",
                    step, getattr(backend, "name", backend))
        return None
    runs = _runs
    if runs is None:
        raise RuntimeError(f"[fanout] pool = {settings.pool!r}, but nothing can submit shard runs in this process: "
                           "LLM steps fan out from caseforge's flows (caseforge.flows.common installs it)")
    folder = shard_folder(con, settings, step)
    with _folder_lock(folder):
        report = _FanOut(con, step, choice, pending, output_model, max_attempts, settings, runs, folder).run()
    publish_table(f"llm-fanout-{step}", [s.row() for s in report.shards],
                  f"llm {step}: {len(report.shards)} shard(s) on pool {settings.pool}")
    return report


def shard_folder(con: duckdb.DuckDBPyConnection, settings: FanoutSettings, step: str) -> Path:
    """<shard_dir>/<database>-<hash of host and path>/<step>: one folder per database and step, so a stopped
    job's shards are found again by the next run of the same step."""
    database = con.execute(sql_text("llm/database_path.sql")).fetchone()[0]
    if settings.shard_dir:
        root = Path(settings.shard_dir)
        if database:          # never inside the warehouse's own files (caseforge.outputs)
            check_output_path(root, load_settings(database), "the LLM shards ([fanout] shard_dir)")
    elif database:
        root = Path(database).resolve().parent / "llm-shards"
    else:
        raise ValueError("[fanout] shard_dir must be set to fan out from an in-memory database")
    where = f"{socket.gethostname()}:{Path(database).resolve() if database else 'memory'}"
    name = f"{Path(database).stem if database else 'memory'}-{hashlib.sha256(where.encode()).hexdigest()[:8]}"
    return root.resolve() / name / re.sub(r"[^A-Za-z0-9._-]+", "-", step)


_LOCKS: dict[Path, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _folder_lock(folder: Path) -> threading.Lock:
    """One job at a time per shard folder (only this process writes the database, so a process lock does)."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(folder, threading.Lock())


@dataclass
class _Live:
    """One shard while it is out on the pool."""

    report: ShardReport
    files: ShardFiles
    run_id: str = ""
    submitted_at: float = 0.0
    starting_at: float | None = None     # when a worker was first seen to have taken the run
    alive_at: float | None = None        # last time the run was seen running or its heartbeat changed
    last_beat: int | None = None
    completed_at: float | None = None
    started: float = 0.0


class _FanOut:
    def __init__(self, con, step, choice, pending, output_model, max_attempts, settings: FanoutSettings,
                 runs: ShardRuns, folder: Path):
        self.con, self.step, self.choice, self.output_model = con, step, choice, output_model
        self.pending, self.max_attempts, self.settings, self.runs, self.folder = (
            pending, max_attempts, settings, runs, folder)
        self.report = FanoutReport(step, settings.deployment, settings.pool, str(folder))
        self.no_worker_since: float | None = None

    # --- the job -----------------------------------------------------------------------------------
    def run(self) -> FanoutReport:
        self.folder.mkdir(parents=True, exist_ok=True)
        pending = self._merge_leftovers(self.pending)
        live = self._submit_all(pending)
        try:
            while live:
                time.sleep(self.settings.poll_s)
                self._watch(live)
        except BaseException:
            for shard in live.values():
                self._quietly(self.runs.cancel, shard.run_id, f"the job of step {self.step} stopped")
            raise
        self._remove_folder_if_empty()
        merged = sum(s.status == "merged" for s in self.report.shards)
        log.info("llm %s: %d of %d shard(s) merged on pool %s", self.step, merged, len(self.report.shards),
                 self.settings.pool)
        return self.report

    def _merge_leftovers(self, pending: list[tuple[str, LLMRequest]]) -> list[tuple[str, LLMRequest]]:
        """Answers an earlier job of this step left (it stopped before merging them) are merged first."""
        leftovers = sorted(self.folder.glob("shard-*.parquet"))
        if not leftovers:
            return pending
        for path in leftovers:
            outcome = merge_shard(self.con, path, self.output_model)
            self.report.leftover_rows += outcome.rows
            path.unlink()
        done = cached_identities(self.con, [identity for identity, _ in pending], ok_only=True)
        log.info("llm %s: merged %d answer(s) an earlier job left in %s", self.step, self.report.leftover_rows,
                 self.folder)
        return [(identity, request) for identity, request in pending if identity not in done]

    def _submit_all(self, pending: list[tuple[str, LLMRequest]]) -> dict[int, _Live]:
        identity_of = {id(request): identity for identity, request in pending}
        live = {}
        groups = split_requests([request for _, request in pending], self.choice.model, self.settings.shards)
        for number, group in enumerate(groups):
            if not group:
                continue
            files = ShardFiles(self.folder, f"shard-{number:03d}")
            write_request_file(files.requests, group)
            shard = _Live(ShardReport(number, [identity_of[id(r)] for r in group]), files, started=time.monotonic())
            self.report.shards.append(shard.report)
            self._submit(shard)
            live[number] = shard
        return live

    def _submit(self, shard: _Live) -> None:
        shard.files.heartbeat.unlink(missing_ok=True)
        choice = self.choice.identity()
        parameters = {"step": self.step, "request_file": str(shard.files.requests), "backend": choice["backend"],
                      "model": choice["model"], "options": choice["options"], "role": self.choice.role,
                      "max_attempts": self.max_attempts, "heartbeat_s": self.settings.heartbeat_s}
        attempt = len(shard.report.submissions) + 1
        name = f"{self.step} shard {shard.report.number + 1}/{self.settings.shards}" + (
            f" (submission {attempt})" if attempt > 1 else "")
        shard.run_id = self.runs.submit(self.settings.deployment, self.settings.pool, parameters, name)
        shard.report.submissions.append(Submission(shard.run_id))
        shard.submitted_at = time.monotonic()
        shard.starting_at = shard.alive_at = shard.last_beat = shard.completed_at = None
        log.info("llm %s: shard %d (%d requests) submitted as run %s", self.step, shard.report.number,
                 len(shard.report.identities), shard.run_id)

    # --- watching ----------------------------------------------------------------------------------
    def _watch(self, live: dict[int, _Live]) -> None:
        waiting = []
        for number, shard in list(live.items()):
            if shard.files.parquet.exists():
                self._merge(shard)
                del live[number]
                continue
            now = time.monotonic()
            state, message = self.runs.state(shard.run_id)
            beat = (read_heartbeat(shard.files.heartbeat) or {}).get("beat")
            if beat is not None and beat != shard.last_beat:
                shard.last_beat, shard.alive_at = beat, now
            if state == RUNNING and shard.alive_at is None:
                shard.alive_at = now
            if state == STARTING and shard.starting_at is None:
                shard.starting_at = now
            if state == COMPLETED:
                shard.completed_at = shard.completed_at or now
                if now - shard.completed_at > max(10.0, 3 * self.settings.poll_s):    # a slow shared volume
                    self._again(live, shard, "its run completed without writing the Parquet shard")
            elif state == FAILED:
                self._again(live, shard, f"its run ended: {message}")
            elif now - shard.submitted_at > self.settings.shard_timeout_s:
                self._quietly(self.runs.cancel, shard.run_id, "shard timeout")
                self._again(live, shard, f"not done after shard_timeout_s = {self.settings.shard_timeout_s:g} s")
            elif shard.alive_at is not None and now - shard.alive_at > self.settings.stale_after_s:
                why = f"no heartbeat for {now - shard.alive_at:.0f} s (worker gone?)"
                self._quietly(self.runs.mark_crashed, shard.run_id, why)
                self._again(live, shard, why)
            elif (shard.alive_at is None and shard.starting_at is not None
                  and now - shard.starting_at > self.settings.start_timeout_s):
                why = f"taken by a worker but not started within start_timeout_s = {self.settings.start_timeout_s:g} s"
                self._quietly(self.runs.mark_crashed, shard.run_id, why)
                self._again(live, shard, why)
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
        shard.files.remove(keep_work=True)      # the work file lets a later run resume
        live.pop(shard.report.number, None)

    def _merge(self, shard: _Live) -> None:
        outcome = merge_shard(self.con, shard.files.parquet, self.output_model)
        report = shard.report
        report.status, report.rows, report.worker = "merged", outcome.rows, outcome.worker
        report.submissions[-1].outcome = "merged"
        report.seconds = time.monotonic() - shard.started
        self.report.calls += outcome.attempts
        self.report.prompt_tokens += outcome.prompt_tokens
        self.report.completion_tokens += outcome.completion_tokens
        shard.files.remove()
        log.info("llm %s: shard %d merged (%d rows, worker %s, %.1f s)", self.step, report.number, outcome.rows,
                 report.worker_name, report.seconds)

    def _remove_folder_if_empty(self) -> None:
        for folder in (self.folder, self.folder.parent):
            try:
                folder.rmdir()
            except OSError:
                return

    def _quietly(self, action, run_id: str, reason: str) -> None:
        try:
            action(run_id, reason)
        except Exception as exc:   # noqa: BLE001 - tidying the orchestrator's view must not stop the job
            log.warning("llm %s: could not update run %s (%s): %s", self.step, run_id, reason, exc)
