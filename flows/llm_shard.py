"""Prefect flow: answer one shard of an LLM step on a GPU worker (deployment `llm-shard`, GPU pool).

The worker never opens the warehouse: it reads a request shard (JSONL; each request carries its step's
JSON schema, which the answers are checked against) and writes the answers as a Parquet shard next to
it; the parent flow merges shards with caseforge.llm.shards.merge_shards.
"""
from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from caseforge.llm.config import backend_for, llm_choice
from caseforge.llm.shards import run_shard


@task(name="llm-shard-answer", cache_policy=NO_CACHE)
def answer_shard(step: str, request_file: str, backend: str | None, model: str | None, options: dict,
                 max_attempts: int) -> dict:
    choice = llm_choice(step=step, backend=backend, model=model, **options)
    parquet_path, result = run_shard(step, backend_for(choice), Path(request_file), max_attempts)
    return {"parquet": str(parquet_path), **result.counts()}


@flow(name="llm-shard")
def llm_shard_flow(step: str, request_file: str, backend: str | None = None, model: str | None = None,
                   options: dict | None = None, max_attempts: int = 3) -> dict:
    """`request_file`: a path the worker can read (a shared volume)."""
    counts = answer_shard(step, request_file, backend, model, options or {}, max_attempts)
    get_run_logger().info("llm shard %s: %s", request_file, counts)
    return counts
