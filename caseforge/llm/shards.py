"""Scaling an LLM step out: shards of requests answered on GPU workers, merged back by one writer.

DuckDB has one writing process, so workers never touch the warehouse:

  parent   write_request_shards(con, ...)  → shard-000.requests.jsonl ... (only requests not yet cached)
  worker   run_shard(...)                  → shard-000.parquet (one row per identity, the ops.llm_calls
                                              columns); a local DuckDB file per shard makes a killed
                                              worker resume where it stopped
  parent   merge_shards(con, dir)          → upserts every shard into ops.llm_calls in one transaction
  parent   run_job(...) as usual           → everything is now a cache hit; no backend call is made
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from caseforge.llm.jobs import CALL_COLUMNS, cached_identities, run_job, schema_for, store_calls
from caseforge.llm.parsing import schema_output_model
from caseforge.llm.types import JobResult, LLMRequest
from caseforge.warehouse import connect, sql_text


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


def write_request_shards(con: duckdb.DuckDBPyConnection, requests: list[LLMRequest], model: str,
                         output_model: type[BaseModel], n_shards: int, out_dir: Path) -> list[Path]:
    """Write the requests that have no cached answer yet as N JSONL request files (empty shards skipped)."""
    schema = schema_for(output_model)
    with_schema = [r if r.json_schema is not None else r.model_copy(update={"json_schema": schema})
                   for r in requests]
    done = cached_identities(con, [r.identity(model) for r in with_schema], ok_only=False)
    pending = [r for r in with_schema if r.identity(model) not in done]
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, shard in enumerate(split_requests(pending, model, n_shards)):
        if not shard:
            continue
        path = out_dir / f"shard-{number:03d}.requests.jsonl"
        path.write_text("".join(r.model_dump_json() + "\n" for r in shard), encoding="utf-8")
        paths.append(path)
    return paths


def read_request_shard(path: Path) -> list[LLMRequest]:
    return [LLMRequest.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def shard_output_model(requests: list[LLMRequest]) -> type[BaseModel]:
    """The output model a shard's answers are checked with, from the JSON schema its requests carry."""
    schemas = {json.dumps(r.json_schema, sort_keys=True) for r in requests}
    if len(schemas) != 1 or requests[0].json_schema is None:
        raise ValueError("a request shard holds requests of one step, each with that step's JSON schema")
    return schema_output_model(requests[0].json_schema)


def run_shard(step: str, backend, request_file: Path, max_attempts: int = 3) -> tuple[Path, JobResult]:
    """Answer one request shard; write <name>.parquet next to it (atomically) and return its path."""
    name = request_file.name.removesuffix(".requests.jsonl")
    work_db = request_file.with_name(f"{name}.work.duckdb")
    parquet_path = request_file.with_name(f"{name}.parquet")
    requests = read_request_shard(request_file)
    con = connect(work_db)
    try:
        result = run_job(con, step, backend, requests, shard_output_model(requests), max_attempts)
        table = con.execute(sql_text("llm/shard_rows.sql")).fetch_arrow_table()
    finally:
        con.close()
    partial = parquet_path.with_suffix(".parquet.partial")
    pq.write_table(table.cast(CALL_COLUMNS), partial)
    partial.replace(parquet_path)
    return parquet_path, result


@dataclass
class MergeOutcome:
    files: int
    rows: int


def merge_shards(con: duckdb.DuckDBPyConnection, shard_dir: Path) -> MergeOutcome:
    """Upsert every shard-*.parquet of `shard_dir` into ops.llm_calls (one transaction).

    A shard's failed answer never replaces an ok answer already in the cache. Merging the same
    shards again changes nothing.
    """
    files = sorted(shard_dir.glob("shard-*.parquet"))
    if not files:
        return MergeOutcome(0, 0)
    tables = []
    for path in files:
        table = pq.read_table(path)
        missing = set(CALL_COLUMNS.names) - set(table.column_names)
        if missing:
            raise ValueError(f"{path}: not an LLM shard (missing columns: {', '.join(sorted(missing))})")
        tables.append(table.select(CALL_COLUMNS.names).cast(CALL_COLUMNS))
    rows = pa.concat_tables(tables)
    store_calls(con, rows)
    return MergeOutcome(len(files), rows.num_rows)
