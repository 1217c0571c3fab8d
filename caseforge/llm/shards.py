"""Scaling an LLM step out: shards of requests answered on GPU workers, merged back by one writer.

DuckDB has one writing process, so workers never touch the warehouse:

  parent   write_request_shards(con, ...)  → shard-000.requests.jsonl ... (only requests not yet cached)
  worker   run_shard(...)                  → shard-000.parquet (one row per identity, the ops.llm_calls
                                              columns, and which worker answered in its metadata); a
                                              DuckDB work file per shard (shard-000.work.duckdb) makes a
                                              killed worker's re-run resume where it stopped, and a
                                              heartbeat file (shard-000.heartbeat) tells the parent the
                                              worker is alive
  parent   merge_shard(con, parquet, Model) → upserts one shard into ops.llm_calls in one transaction,
                                              parsing every answer into the step's real output model
  parent   run_job(...) as usual           → everything is now a cache hit; no backend call is made

caseforge.llm.fanout does all of this for run_job when the settings name a worker pool.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel

from caseforge.llm.jobs import CALL_COLUMNS, cached_identities, run_job, schema_for, store_calls
from caseforge.llm.parsing import InvalidOutput, parse_output, schema_output_model
from caseforge.llm.types import FreeText, JobResult, LLMRequest
from caseforge.warehouse import connect, sql_text

WORKER_METADATA = b"caseforge.worker"


def shard_of(identity: str, n_shards: int) -> int:
    """Stable: a request lands in the same shard whatever else is in the job."""
    return int(hashlib.sha256(identity.encode()).hexdigest()[:8], 16) % n_shards


def split_requests(requests: list[LLMRequest], model: str, n_shards: int) -> list[list[LLMRequest]]:
    if n_shards < 1:
        raise ValueError("n_shards must be at least 1")
    shards: list[list[LLMRequest]] = [[] for _ in range(n_shards)]
    for request in requests:
        shards[shard_of(request.identity(model), n_shards)].append(request)
    return shards


@dataclass(frozen=True)
class ShardFiles:
    """Every file of one shard, side by side in the shard folder (a volume parent and workers share)."""

    folder: Path
    name: str           # shard-000

    @classmethod
    def of(cls, request_file: Path) -> "ShardFiles":
        return cls(request_file.parent, request_file.name.removesuffix(".requests.jsonl"))

    @property
    def requests(self) -> Path:
        return self.folder / f"{self.name}.requests.jsonl"

    @property
    def parquet(self) -> Path:
        return self.folder / f"{self.name}.parquet"

    @property
    def work_db(self) -> Path:
        return self.folder / f"{self.name}.work.duckdb"

    @property
    def heartbeat(self) -> Path:
        return self.folder / f"{self.name}.heartbeat"

    def all(self) -> list[Path]:
        """Everything a shard leaves, including DuckDB's write-ahead log and half-written files."""
        return [self.requests, self.parquet, self.work_db, self.heartbeat,
                self.work_db.with_name(self.work_db.name + ".wal"), self.parquet.with_suffix(".parquet.partial"),
                self.requests.with_name(self.requests.name + ".partial"),
                self.heartbeat.with_name(self.heartbeat.name + ".partial")]

    def remove(self, keep_work: bool = False) -> None:
        for path in self.all():
            if keep_work and path.name.startswith(self.work_db.name):
                continue
            path.unlink(missing_ok=True)


def write_request_file(path: Path, requests: list[LLMRequest]) -> Path:
    """One request shard (JSONL), written whole or not at all."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text("".join(r.model_dump_json() + "\n" for r in requests), encoding="utf-8")
    partial.replace(path)
    return path


def write_request_shards(con: duckdb.DuckDBPyConnection, requests: list[LLMRequest], model: str,
                         output_model: type[BaseModel], n_shards: int, out_dir: Path) -> list[Path]:
    """Write the requests that have no cached answer yet as N JSONL request files (empty shards skipped)."""
    schema = None if output_model is FreeText else schema_for(output_model)
    with_schema = [r if r.json_schema is not None or schema is None else r.model_copy(update={"json_schema": schema})
                   for r in requests]
    done = cached_identities(con, [r.identity(model) for r in with_schema], ok_only=False)
    pending = [r for r in with_schema if r.identity(model) not in done]
    out_dir.mkdir(parents=True, exist_ok=True)
    return [write_request_file(out_dir / f"shard-{number:03d}.requests.jsonl", shard)
            for number, shard in enumerate(split_requests(pending, model, n_shards)) if shard]


def read_request_shard(path: Path) -> list[LLMRequest]:
    return [LLMRequest.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def shard_output_model(requests: list[LLMRequest]) -> type[BaseModel]:
    """The output model a shard's answers are checked with, from the JSON schema its requests carry
    (no schema at all: the step wants prose, FreeText)."""
    schemas = {json.dumps(r.json_schema, sort_keys=True) for r in requests}
    if len(schemas) != 1:
        raise ValueError("a request shard holds requests of one step, each with that step's JSON schema")
    if requests[0].json_schema is None:
        return FreeText
    return schema_output_model(requests[0].json_schema)


def this_worker() -> dict:
    """Who answers a shard: host, process and its parent (a process worker starts one process per flow run)."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "ppid": os.getppid()}


class Heartbeat:
    """Rewrites a small JSON file every `every_s` seconds while a shard is answered. The parent reads its
    content (a counter that changes), never its modification time, so clocks of different machines
    do not matter."""

    def __init__(self, path: Path, every_s: float, worker: dict):
        self.path, self.every_s, self.worker = path, every_s, worker
        self.beats = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat {path.name}", daemon=True)

    def beat(self) -> None:
        self.beats += 1
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(json.dumps({"beat": self.beats, "at": datetime.now(timezone.utc).isoformat(),
                                       **self.worker}), encoding="utf-8")
        partial.replace(self.path)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.beat()
            except OSError:       # the shard folder went away: the parent gave this shard up
                return

    def __enter__(self) -> "Heartbeat":
        self.beat()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)


def read_heartbeat(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def run_shard(step: str, backend, request_file: Path, max_attempts: int = 3, heartbeat_s: float = 5.0,
              worker: dict | None = None) -> tuple[Path, JobResult]:
    """Answer one request shard; write <name>.parquet next to it (atomically) and return its path.

    The answers go to the shard's own DuckDB work file first, so a re-run of a killed shard asks only
    what was not answered yet. Never fans out again, never re-asks a failure it recorded itself.
    """
    files = ShardFiles.of(Path(request_file))
    worker = {**this_worker(), **(worker or {})}
    requests = read_request_shard(files.requests)
    with Heartbeat(files.heartbeat, heartbeat_s, worker):
        con = connect(files.work_db)
        try:
            result = run_job(con, step, backend, requests, shard_output_model(requests), max_attempts,
                             retry_failed=False, fanout=False)
            table = con.execute(sql_text("llm/shard_rows.sql")).fetch_arrow_table()
        finally:
            con.close()
        table = table.cast(CALL_COLUMNS).replace_schema_metadata({WORKER_METADATA: json.dumps(worker)})
        partial = files.parquet.with_suffix(".parquet.partial")
        pq.write_table(table, partial)
        partial.replace(files.parquet)
    return files.parquet, result


@dataclass
class MergeOutcome:
    files: int
    rows: int
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    worker: dict | None = None


def read_shard(path: Path) -> tuple[pa.Table, dict | None]:
    """A Parquet shard as CALL_COLUMNS, and the worker that answered it (from its metadata)."""
    table = pq.read_table(path)
    missing = set(CALL_COLUMNS.names) - set(table.column_names)
    if missing:
        raise ValueError(f"{path}: not an LLM shard (missing columns: {', '.join(sorted(missing))})")
    raw = (table.schema.metadata or {}).get(WORKER_METADATA)
    return table.select(CALL_COLUMNS.names).cast(CALL_COLUMNS), json.loads(raw) if raw else None


def parse_into(rows: pa.Table, output_model: type[BaseModel]) -> pa.Table:
    """A worker checked its answers against the JSON schema only; parse them into the step's real model, so
    the cache holds exactly what an in-process run would have stored (same parsed JSON, and an answer
    the model refuses is a failure with the model's own reason)."""
    statuses, parsed, errors = (rows.column(n).to_pylist() for n in ("status", "parsed", "error"))
    texts = rows.column("response_text").to_pylist()
    for i, text in enumerate(texts):
        reparse = statuses[i] == "ok" or (text is not None and output_model is not FreeText)
        if not reparse:
            continue
        try:
            parsed[i], statuses[i], errors[i] = parse_output(text, output_model).model_dump_json(), "ok", None
        except InvalidOutput as exc:
            parsed[i], statuses[i], errors[i] = None, "failed", str(exc)
    for name, values in (("status", statuses), ("parsed", parsed), ("error", errors)):
        rows = rows.set_column(rows.schema.get_field_index(name), name, pa.array(values, pa.string()))
    return rows


def merge_shard(con: duckdb.DuckDBPyConnection, path: Path, output_model: type[BaseModel] | None = None
                ) -> MergeOutcome:
    """Upsert one Parquet shard into ops.llm_calls (one transaction; only this shard's rows in memory).
    With `output_model`, answers are parsed into it first (see parse_into)."""
    rows, worker = read_shard(path)
    if output_model is not None:
        rows = parse_into(rows, output_model)
    store_calls(con, rows)

    def total(name: str) -> int:
        return int(pc.sum(rows.column(name)).as_py() or 0)
    return MergeOutcome(1, rows.num_rows, total("attempts"), total("prompt_tokens"), total("completion_tokens"),
                        worker)


def merge_shards(con: duckdb.DuckDBPyConnection, shard_dir: Path, output_model: type[BaseModel] | None = None
                 ) -> MergeOutcome:
    """Upsert every shard-*.parquet of `shard_dir` into ops.llm_calls, one shard (one transaction) at a time.

    A shard's failed answer never replaces an ok answer already in the cache. Merging the same
    shards again changes nothing.
    """
    outcome = MergeOutcome(0, 0)
    for path in sorted(Path(shard_dir).glob("shard-*.parquet")):
        one = merge_shard(con, path, output_model)
        outcome.files += 1
        outcome.rows += one.rows
    return outcome
