"""The LLM cache: ops.llm_calls, one row per request identity (caseforge.llm.types.LLMRequest.identity).

Both sides of a fan-out use it: run_job reads and writes it in the warehouse, a shard worker in a database of
its own in memory (caseforge.llm.worker), and the orchestrator merges workers' rows into the warehouse
(caseforge.llm.shards.merge_rows). A row with status 'unanswered' records that no endpoint answered: it is
not the request's answer, so the next run asks again, and it never replaces an ok or failed answer.

The identity is the request (model name, messages, sampling parameters, output schema, prompt template id and
content hash), not who served it: the same model name answered by two backends or endpoints shares one answer.
A refresh (`--refresh`, CASEFORGE_LLM_REFRESH=1) asks again what the cache answered and keeps the answers it
replaces in ops.llm_call_history.
"""
from __future__ import annotations

import duckdb
import pyarrow as pa

from caseforge.warehouse.statements import sql_text, transaction

UNANSWERED = "unanswered"      # ops.llm_calls.status of a request no endpoint answered (not a cached answer)

CALL_COLUMNS = pa.schema([
    ("identity", pa.string()), ("step", pa.string()), ("backend", pa.string()), ("model", pa.string()),
    ("template_id", pa.string()), ("template_sha", pa.string()), ("request", pa.string()),
    ("response_text", pa.string()), ("parsed", pa.string()), ("status", pa.string()), ("error", pa.string()),
    ("attempts", pa.int32()), ("prompt_tokens", pa.int32()), ("completion_tokens", pa.int32()),
    ("latency_ms", pa.float64()), ("created_at", pa.timestamp("us", tz="UTC")), ("served_model", pa.string()),
    ("run_id", pa.int64()),
])
ADDED_COLUMNS = ("served_model", "run_id")     # migration 160: absent from shards an older worker wrote


def cached_identities(con: duckdb.DuckDBPyConnection, identities: list[str], ok_only: bool = False) -> set[str]:
    """Which of these identities already have a recorded answer (any, or only ok ones)."""
    return {identity for identity, row in cached_calls(con, identities).items()
            if row[0] == "ok" or (not ok_only and row[0] != UNANSWERED)}


def cached_calls(con: duckdb.DuckDBPyConnection, identities: list[str]) -> dict[str, tuple]:
    """identity → (status, parsed, response_text, error) of the rows these identities have."""
    if not identities:
        return {}
    con.register("llm_wanted", pa.table({"identity": pa.array(identities, pa.string())}))
    try:
        rows = con.execute(sql_text("llm/cached_calls.sql")).fetchall()
    finally:
        con.unregister("llm_wanted")
    return {row[0]: row[1:] for row in rows}


def write_calls(con: duckdb.DuckDBPyConnection, rows: list[tuple], refresh: bool = False) -> None:
    """Store ops.llm_calls rows (tuples in CALL_COLUMNS order) in one transaction."""
    if rows:
        store_calls(con, calls_table(rows), refresh)


def calls_table(rows: list[tuple]) -> pa.Table:
    """ops.llm_calls rows (tuples in CALL_COLUMNS order) as an Arrow table of CALL_COLUMNS."""
    columns = list(zip(*rows)) if rows else [[] for _ in CALL_COLUMNS.names]
    return pa.table({name: pa.array(values, CALL_COLUMNS.field(name).type)
                     for name, values in zip(CALL_COLUMNS.names, columns)}, schema=CALL_COLUMNS)


def store_calls(con: duckdb.DuckDBPyConnection, calls: pa.Table, refresh: bool = False) -> None:
    """Upsert a table of calls (CALL_COLUMNS) into ops.llm_calls in one transaction: one row per
    identity, and a failed answer never replaces an ok one. A refresh replaces an answer with the new one
    (a failure too: it is what the model answers now), keeping the old in ops.llm_call_history; no answer
    (unanswered) still replaces nothing."""
    con.register("llm_call_rows", calls)
    try:
        with transaction(con):
            if refresh:
                con.execute(sql_text("llm/keep_replaced_calls.sql"))
            con.execute(sql_text("llm/store_calls.sql"), {"refresh": refresh})
    finally:
        con.unregister("llm_call_rows")


def release_cost(con: duckdb.DuckDBPyConnection, stages: list[dict]) -> list[dict]:
    """What the cached answers of a release's stages (dicts with stage, model, template_sha: the card's "stages")
    cost when they were made, per stage, model and served model (sql/llm/release_cost.sql)."""
    if not stages:
        return []
    wanted = pa.table({name: pa.array([str(s.get(name)) if s.get(name) is not None else None for s in stages],
                                      pa.string()) for name in ("stage", "model", "template_sha")})
    con.register("release_stages", wanted)
    try:
        cursor = con.execute(sql_text("llm/release_cost.sql"))
        columns = [d[0] for d in cursor.description]
        return [dict(zip(columns, row)) for row in cursor.fetchall()]
    finally:
        con.unregister("release_stages")

