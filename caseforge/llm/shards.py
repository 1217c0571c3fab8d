"""Shards of an LLM step in a shard store (caseforge.store): what the orchestrator and its workers exchange, and
nothing else. Workers never touch the warehouse (DuckDB has one writing process) and share no folder with the
orchestrator; the store (s3://, gs://, or a local folder on one machine) is all they have in common.

One shard is a prefix of the store:

  <shard>/requests.jsonl           the requests (each with its step's JSON schema), written by the orchestrator
  <shard>/parts/<run>-NNNNNN.parquet  answers as a worker saves them (every batch_size answers or ten seconds):
                                   a resubmitted shard asks only what no part answers yet
  <shard>/answers.parquet          every answer of the shard, written last and whole by the worker that finished
                                   it (the worker that answered is in the file's metadata)

Rows are ops.llm_calls rows (caseforge.llm.cache.CALL_COLUMNS). The orchestrator (caseforge.llm.fanout)
merges a shard with `merge_rows`, which parses every answer into the step's real output model first.
The worker side is caseforge.llm.worker.
"""
from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel

from caseforge.llm.cache import ADDED_COLUMNS, CALL_COLUMNS, UNANSWERED, cached_identities, store_calls
from caseforge.llm.parsing import InvalidOutput, parse_output, schema_for, schema_output_model
from caseforge.llm.types import FreeText, LLMRequest
from caseforge.run_record import current_run
from caseforge.store import Store

WORKER_METADATA = b"caseforge.worker"
REQUESTS, ANSWERS, PARTS = "requests.jsonl", "answers.parquet", "parts/"


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
class Shard:
    """One shard's objects in a store."""

    store: Store
    name: str           # its prefix in the store, e.g. "j3f9a0c-shard-000"

    @property
    def requests(self) -> str:
        return f"{self.name}/{REQUESTS}"

    @property
    def answers(self) -> str:
        return f"{self.name}/{ANSWERS}"

    def part(self, run: str, number: int) -> str:
        return f"{self.name}/{PARTS}{run}-{number:06d}.parquet"

    def parts(self) -> list[str]:
        return [n for n in self.store.list(f"{self.name}/{PARTS}") if n.endswith(".parquet")]

    def write_requests(self, requests: list[LLMRequest]) -> None:
        self.store.put(self.requests, "".join(r.model_dump_json() + "\n" for r in requests).encode("utf-8"))

    def read_requests(self) -> list[LLMRequest]:
        text = self.store.get(self.requests).decode("utf-8")
        return [LLMRequest.model_validate_json(line) for line in text.splitlines() if line.strip()]

    def has_answers(self) -> bool:
        return self.store.exists(self.answers)

    def read_answers(self) -> tuple[pa.Table, dict | None]:
        return read_rows(self.store.get(self.answers), f"{self.store.url}/{self.answers}")

    def read_parts(self) -> pa.Table:
        """Every row the parts hold, one per identity (the last saved wins)."""
        tables = [read_rows(self.store.get(name), f"{self.store.url}/{name}")[0] for name in self.parts()]
        if not tables:
            return CALL_COLUMNS.empty_table()
        rows = pa.concat_tables(tables)
        last = {identity: i for i, identity in enumerate(rows.column("identity").to_pylist())}
        return rows.take(sorted(last.values()))

    def remove(self) -> None:
        self.store.delete_all(self.name)


def rows_bytes(rows: pa.Table, worker: dict | None = None) -> bytes:
    """Rows of CALL_COLUMNS as Parquet bytes (the worker, if given, in the file's metadata)."""
    table = rows.cast(CALL_COLUMNS)
    if worker is not None:
        table = table.replace_schema_metadata({WORKER_METADATA: json.dumps(worker)})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def read_rows(data: bytes, where: str) -> tuple[pa.Table, dict | None]:
    """Parquet bytes as CALL_COLUMNS, and the worker that answered them (from the metadata)."""
    table = pq.read_table(io.BytesIO(data))
    for name in ADDED_COLUMNS:          # a shard an older worker wrote: nothing recorded
        if name not in table.column_names:
            table = table.append_column(name, pa.nulls(table.num_rows, CALL_COLUMNS.field(name).type))
    missing = set(CALL_COLUMNS.names) - set(table.column_names)
    if missing:
        raise ValueError(f"{where}: not an LLM shard (missing columns: {', '.join(sorted(missing))})")
    raw = (table.schema.metadata or {}).get(WORKER_METADATA)
    return table.select(CALL_COLUMNS.names).cast(CALL_COLUMNS), json.loads(raw) if raw else None


def answered(rows: pa.Table) -> set[str]:
    """The identities these rows answer (ok or failed; 'unanswered' is no answer)."""
    return {identity for identity, status in zip(rows.column("identity").to_pylist(),
                                                  rows.column("status").to_pylist()) if status != UNANSWERED}


def shard_output_model(requests: list[LLMRequest]) -> type[BaseModel]:
    """The output model a shard's answers are checked with, from the JSON schema its requests carry
    (no schema at all: the step wants prose, FreeText)."""
    schemas = {json.dumps(r.json_schema, sort_keys=True) for r in requests}
    if len(schemas) != 1:
        raise ValueError("a request shard holds requests of one step, each with that step's JSON schema")
    if requests[0].json_schema is None:
        return FreeText
    return schema_output_model(requests[0].json_schema)


@dataclass
class MergeOutcome:
    rows: int
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    worker: dict | None = None


def parse_into(rows: pa.Table, output_model: type[BaseModel]) -> pa.Table:
    """A worker checked its answers against the JSON schema only; parse them into the step's real model, so
    the cache holds exactly what an in-process run would have stored (same parsed JSON, and an answer
    the model refuses is a failure with the model's own reason)."""
    statuses, parsed, errors = (rows.column(n).to_pylist() for n in ("status", "parsed", "error"))
    texts = rows.column("response_text").to_pylist()
    for i, text in enumerate(texts):
        reparse = statuses[i] == "ok" or (text is not None and statuses[i] != UNANSWERED
                                          and output_model is not FreeText)
        if not reparse:
            continue
        try:
            parsed[i], statuses[i], errors[i] = parse_output(text, output_model).model_dump_json(), "ok", None
        except InvalidOutput as exc:
            parsed[i], statuses[i], errors[i] = None, "failed", str(exc)
    for name, values in (("status", statuses), ("parsed", parsed), ("error", errors)):
        rows = rows.set_column(rows.schema.get_field_index(name), name, pa.array(values, pa.string()))
    return rows


def merge_rows(con: duckdb.DuckDBPyConnection, rows: pa.Table, output_model: type[BaseModel] | None = None,
               worker: dict | None = None, refresh: bool = False) -> MergeOutcome:
    """Upsert a shard's rows into ops.llm_calls in one transaction (a failed answer never replaces an ok one;
    merging again changes nothing). With `output_model`, answers are parsed into it first (parse_into)."""
    if output_model is not None:
        rows = parse_into(rows, output_model)
    run = current_run()
    if run is not None:         # a worker has no run of its own: its answers are the run's that merges them
        asked = pc.fill_null(rows.column("run_id"), pa.scalar(run, pa.int64()))
        rows = rows.set_column(rows.schema.get_field_index("run_id"), "run_id", asked)
    store_calls(con, rows, refresh)

    def total(name: str) -> int:
        return int(pc.sum(rows.column(name)).as_py() or 0)
    return MergeOutcome(rows.num_rows, total("attempts"), total("prompt_tokens"), total("completion_tokens"), worker)


# --- the pieces used alone (a shard store by hand) -----------------------------------------------------------
def write_request_shards(con: duckdb.DuckDBPyConnection, requests: list[LLMRequest], model: str,
                         output_model: type[BaseModel], n_shards: int, store: Store, prefix: str = "shard"
                         ) -> list[Shard]:
    """The requests with no cached answer yet, as N shards in `store` (empty shards skipped)."""
    schema = None if output_model is FreeText else schema_for(output_model)
    with_schema = [r if r.json_schema is not None or schema is None else r.model_copy(update={"json_schema": schema})
                   for r in requests]
    done = cached_identities(con, [r.identity(model) for r in with_schema], ok_only=False)
    pending = [r for r in with_schema if r.identity(model) not in done]
    shards = []
    for number, group in enumerate(split_requests(pending, model, n_shards)):
        if group:
            shard = Shard(store, f"{prefix}-{number:03d}")
            shard.write_requests(group)
            shards.append(shard)
    return shards


def merge_shards(con: duckdb.DuckDBPyConnection, store: Store, output_model: type[BaseModel] | None = None
                 ) -> MergeOutcome:
    """Merge every finished shard's answers in `store` into ops.llm_calls, one shard (one transaction) at a
    time; a shard's objects stay (remove them with Shard.remove)."""
    outcome = MergeOutcome(0)
    for name in store.list():
        if name.endswith(f"/{ANSWERS}"):
            rows, worker = Shard(store, name.rsplit("/", 1)[0]).read_answers()
            outcome.rows += merge_rows(con, rows, output_model, worker).rows
    return outcome
