"""Stages after loading: apply the filters, select representatives. No Prefect here."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import duckdb

from caseforge.runs import StageReport
from caseforge.tasks.cn.filters import FilterConfig, filter_reasons
from caseforge.tasks.cn.select import EmbedderError, embed, embed_text, select_representatives
from caseforge.warehouse import run_sql, sql_text, transaction


def _rows(result) -> list[dict]:
    names = [d[0] for d in result.description]
    return [dict(zip(names, row)) for row in result.fetchall()]


def apply_filters(con: duckdb.DuckDBPyConnection, config: FilterConfig, report: StageReport) -> dict[str, int]:
    """Decide every curated judgment under `config`; returns counts per exclusion reason."""
    docs = _rows(run_sql(con, "cn/filter_candidates.sql", {"source_format": None}))
    now = datetime.now(timezone.utc)
    decisions, reason_counts = [], {}
    for doc in docs:
        reasons = filter_reasons(doc, config)
        for reason in reasons:
            reason_counts[reason] = reason_counts.get(reason, 0) + 1
        decisions.append((doc["doc_id"], config.key, not reasons, json.dumps(reasons, ensure_ascii=False), now))
    with transaction(con):
        run_sql(con, "cn/replace_filter_decisions.sql", {"filter_config": config.key})
        if decisions:
            con.executemany(sql_text("cn/insert_filter_decision.sql"), decisions)
    kept = sum(1 for d in decisions if d[2])
    report.add("filter_kept", kept)
    report.add("filter_excluded", len(decisions) - kept)
    return reason_counts


def selection_name(config: FilterConfig, embedder: str, n: int, k: int, seed: int) -> str:
    return f"{config.key}|{embedder}|n={n}|k={k}|seed={seed}"


def select(con: duckdb.DuckDBPyConnection, config: FilterConfig, embedder: str, n: int, k: int, seed: int,
           report: StageReport) -> str | None:
    """Embed the kept documents, cluster them and record N representatives; returns the selection name."""
    docs = _rows(run_sql(con, "cn/kept_documents.sql", {"filter_config": config.key}))
    if not docs:
        report.fail(f"cn selection: no documents kept by filter {config.key}; nothing to select")
        return None
    try:
        vectors = embed([embed_text(d) for d in docs], embedder, seed=seed)
    except EmbedderError as exc:
        report.fail(f"cn selection: {exc}")
        return None
    picks = select_representatives([d["doc_id"] for d in docs], vectors, n, k, seed)
    name = selection_name(config, embedder, n, k, seed)
    now = datetime.now(timezone.utc)
    with transaction(con):
        run_sql(con, "cn/replace_selection.sql", {"selection": name})
        con.executemany(
            sql_text("cn/insert_representative.sql"),
            [(name, p.doc_id, p.cluster, p.distance, p.rank_in_cluster, p.cluster_size, embedder,
              max(1, min(k, len(docs))), seed, now) for p in picks])
    report.add("representatives", len(picks))
    if len(picks) < n:
        report.add("representatives_short", n - len(picks))
    return name


def filter_reason_counts(con: duckdb.DuckDBPyConnection, config: FilterConfig) -> list[dict]:
    return _rows(run_sql(con, "cn/filter_reason_counts.sql", {"filter_config": config.key}))
