"""Jobs, not calls: a step hands over a batch of requests and gets validated outputs and failures.

Every answer is cached in ops.llm_calls under its request identity. A repeated request is answered
from the cache; a job killed halfway and started again sends only what had not finished, because
results are committed chunk by chunk (one transaction per backend batch, not per call).
"""
from __future__ import annotations

import logging
from datetime import datetime, timezone

import duckdb
import pyarrow as pa
from pydantic import BaseModel

from caseforge.llm.parsing import InvalidOutput, parse_output
from caseforge.llm.types import Completion, Failure, FreeText, JobResult, LLMRequest
from caseforge.progress import Progress
from caseforge.warehouse import sql_text, transaction

log = logging.getLogger(__name__)

DEFAULT_MAX_ATTEMPTS = 3


def schema_for(model: type[BaseModel]) -> dict:
    return model.model_json_schema()


CALL_COLUMNS = pa.schema([
    ("identity", pa.string()), ("step", pa.string()), ("backend", pa.string()), ("model", pa.string()),
    ("template_id", pa.string()), ("template_sha", pa.string()), ("request", pa.string()),
    ("response_text", pa.string()), ("parsed", pa.string()), ("status", pa.string()), ("error", pa.string()),
    ("attempts", pa.int32()), ("prompt_tokens", pa.int32()), ("completion_tokens", pa.int32()),
    ("latency_ms", pa.float64()), ("created_at", pa.timestamp("us", tz="UTC")),
])


def cached_identities(con: duckdb.DuckDBPyConnection, identities: list[str], ok_only: bool = False) -> set[str]:
    """Which of these identities already have a recorded answer (any, or only ok ones)."""
    return {identity for identity, row in _cached(con, identities).items() if row[0] == "ok" or not ok_only}


def _cached(con: duckdb.DuckDBPyConnection, identities: list[str]) -> dict[str, tuple]:
    if not identities:
        return {}
    con.register("llm_wanted", pa.table({"identity": pa.array(identities, pa.string())}))
    try:
        rows = con.execute(sql_text("llm/cached_calls.sql")).fetchall()
    finally:
        con.unregister("llm_wanted")
    return {row[0]: row[1:] for row in rows}


def write_calls(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    """Upsert ops.llm_calls rows (tuples in CALL_COLUMNS order) in one transaction."""
    if not rows:
        return
    columns = list(zip(*rows))
    table = pa.table({name: pa.array(values, CALL_COLUMNS.field(name).type)
                      for name, values in zip(CALL_COLUMNS.names, columns)}, schema=CALL_COLUMNS)
    con.register("llm_call_rows", table)
    try:
        with transaction(con):
            con.execute(sql_text("llm/upsert_calls.sql"))
    finally:
        con.unregister("llm_call_rows")


def run_job(
    con: duckdb.DuckDBPyConnection,
    step: str,
    backend,
    requests: list[LLMRequest],
    output_model: type[BaseModel],
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    retry_failed: bool = False,
) -> JobResult:
    """Answer every request (cache first), parse into `output_model`, record everything.

    Invalid output is retried up to `max_attempts` times (with a varied seed), then recorded as a
    failure with the raw text. Failures recorded by an earlier run count as finished unless
    `retry_failed`. The caller decides what a failure means for its step.
    """
    keys = [r.key for r in requests]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{step}: request keys must be unique within a job")
    result = JobResult()
    schema = None if output_model is FreeText else schema_for(output_model)
    by_identity: dict[str, list[LLMRequest]] = {}
    for request in requests:
        if request.json_schema is None and schema is not None:
            request = request.model_copy(update={"json_schema": schema})
        by_identity.setdefault(request.identity(backend.model), []).append(request)

    cached = _cached(con, list(by_identity))
    pending: list[tuple[str, LLMRequest]] = []
    for identity, group in by_identity.items():
        hit = cached.get(identity)
        if hit is not None and (hit[0] == "ok" or not retry_failed):
            status, parsed, raw, error = hit
            for request in group:
                result.cache_hits += 1
                if status == "ok":
                    result.outputs[request.key] = output_model.model_validate_json(parsed)
                else:
                    result.failures[request.key] = Failure(request.key, identity, error or "failed earlier", raw)
            continue
        pending.append((identity, group[0]))

    attempts = min(max_attempts, int(getattr(backend, "max_attempts", max_attempts)))
    progress = Progress(f"llm {step}", total=len(pending))
    size = max(1, int(getattr(backend, "batch_size", 64)))
    for start in range(0, len(pending), size):
        chunk = pending[start:start + size]
        rows, objects = _answer_chunk(step, backend, chunk, output_model, attempts, result)
        write_calls(con, rows)
        for row in rows:
            identity, raw, status, error = row[0], row[7], row[9], row[10]
            for request in by_identity[identity]:
                if status == "ok":
                    result.outputs[request.key] = objects[identity]
                else:
                    result.failures[request.key] = Failure(request.key, identity, error, raw)
        progress.step(len(chunk))
    if pending:
        progress.close()
    if result.failures:
        log.warning("llm %s: %d of %d requests failed", step, len(result.failures), len(requests))
    return result


def _answer_chunk(step, backend, chunk, output_model, max_attempts, result: JobResult):
    """Ask the backend, re-asking only the invalid ones.

    Returns the ops.llm_calls rows for the chunk and identity → parsed object for the valid ones.
    """
    now = datetime.now(timezone.utc)
    outcome: dict[str, tuple] = {}
    todo = list(chunk)
    for attempt in range(1, max_attempts + 1):
        if not todo:
            break
        sent = [_with_attempt_seed(req, attempt) for _, req in todo]
        completions: list[Completion] = backend.complete_batch(sent)
        if len(completions) != len(sent):
            raise RuntimeError(f"{backend.name} returned {len(completions)} completions for {len(sent)} requests")
        result.backend_calls += len(sent)
        retry = []
        for (identity, request), completion in zip(todo, completions):
            result.prompt_tokens += completion.prompt_tokens or 0
            result.completion_tokens += completion.completion_tokens or 0
            parsed, error = None, completion.error
            if error is None:
                try:
                    parsed = parse_output(completion.text, output_model)
                except InvalidOutput as exc:
                    error = str(exc)
            outcome[identity] = (request, completion, parsed, error, attempt)
            if parsed is None and attempt < max_attempts:
                retry.append((identity, request))
        todo = retry
    rows, objects = [], {}
    for identity, (request, completion, parsed, error, attempts) in outcome.items():
        if parsed is not None:
            objects[identity] = parsed
        rows.append((
            identity, step, backend.name, backend.model, request.template_id, request.template_sha,
            request.model_dump_json(), completion.text, None if parsed is None else parsed.model_dump_json(),
            "ok" if parsed is not None else "failed",
            None if parsed is not None else (error or "no output"), attempts, completion.prompt_tokens,
            completion.completion_tokens,
            None if completion.latency_s is None else completion.latency_s * 1000.0, now,
        ))
    return rows, objects


def _with_attempt_seed(request: LLMRequest, attempt: int) -> LLMRequest:
    """A retry must not get the same deterministic answer again; identity stays the original's."""
    if attempt == 1:
        return request
    seed = (request.params.seed or 0) + attempt
    return request.model_copy(update={"params": request.params.model_copy(update={"seed": seed})})
