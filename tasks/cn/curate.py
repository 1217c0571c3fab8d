"""Stages after loading: apply the filters, select representatives. No Prefect here."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import duckdb

from caseforge.fingerprints import last_fingerprint, record_fingerprint
from caseforge.stage_report import StageReport
from caseforge.tasks.cn.filters import FilterConfig, filter_reasons
from caseforge.tasks.cn.select import EmbedderError, embed, embed_text, select_representatives
from caseforge.warehouse.statements import run_sql, run_sql_over_rows, transaction

SELECTION_STAGE = "cn-selection"            # its fingerprints in ops.input_fingerprints


def _rows(result) -> list[dict]:
    names = [d[0] for d in result.description]
    return [dict(zip(names, row)) for row in result.fetchall()]


def apply_filters(con: duckdb.DuckDBPyConnection, config: FilterConfig, report: StageReport) -> dict[str, int]:
    """Decide the judgments that have no decision under `config` yet or were loaded again since theirs, and
    write those decisions in one statement (the others stay as they were); returns the counts per exclusion
    reason of the decisions made now. `filter_decided` counts them, `filter_kept` / `filter_excluded` are the
    configuration's totals."""
    docs = _rows(run_sql(con, "cn/filter_candidates.sql", {"filter_config": config.key}))
    now = datetime.now(timezone.utc)
    decisions, reason_counts = [], {}
    for doc in docs:
        reasons = filter_reasons(doc, config)
        for reason in reasons:
            reason_counts[reason] = reason_counts.get(reason, 0) + 1
        decisions.append({"doc_id": doc["doc_id"], "filter_config": config.key, "kept": not reasons,
                          "reasons": json.dumps(reasons, ensure_ascii=False), "decided_at": now,
                          "judgment_updated_at": doc["updated_at"]})
    with transaction(con):
        run_sql_over_rows(con, "cn/upsert_filter_decisions.sql", decisions)
    kept, excluded = run_sql(con, "cn/filter_totals.sql", {"filter_config": config.key}).fetchone()
    report.add("filter_decided", len(decisions))
    report.add("filter_kept", kept)
    report.add("filter_excluded", excluded)
    return reason_counts


def selection_name(config: FilterConfig, embedder: str, n: int, k: int, seed: int) -> str:
    return f"{config.key}|{embedder}|n={n}|k={k}|seed={seed}"


def select(con: duckdb.DuckDBPyConnection, config: FilterConfig, embedder: str, n: int, k: int, seed: int,
           report: StageReport) -> str | None:
    """Embed the kept documents, cluster them and record N representatives; returns the selection name.

    K-Means over the kept documents is one computation over all of them (the same documents, embedder, k, n
    and seed give the same picks whatever came before), so it is not made incremental: it runs again only
    when the kept documents changed (their ids and judgment rows, fingerprinted in SQL), else the selection
    stands (`representatives_unchanged`)."""
    name = selection_name(config, embedder, n, k, seed)
    kept_rows, kept_hash = run_sql(con, "cn/kept_fingerprint.sql", {"filter_config": config.key}).fetchone()
    fingerprint = f"{kept_rows}:{kept_hash}"
    held = run_sql(con, "cn/selection_size.sql", {"selection": name}).fetchone()[0]
    if held and last_fingerprint(con, SELECTION_STAGE, name) == fingerprint:
        report.add("representatives_unchanged", held)
        return name
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
    now = datetime.now(timezone.utc)
    clusters = max(1, min(k, len(docs)))
    with transaction(con):
        run_sql(con, "cn/replace_selection.sql", {"selection": name})
        run_sql_over_rows(con, "cn/insert_representatives.sql", [
            {"selection": name, "doc_id": p.doc_id, "cluster": p.cluster, "distance": p.distance,
             "rank_in_cluster": p.rank_in_cluster, "cluster_size": p.cluster_size, "embedder": embedder,
             "n_clusters": clusters, "seed": seed, "selected_at": now} for p in picks])
        record_fingerprint(con, SELECTION_STAGE, name, fingerprint, {"kept": {"rows": kept_rows, "hash": kept_hash}},
                           report.run_id)
    report.add("representatives", len(picks))
    if len(picks) < n:
        report.add("representatives_short", n - len(picks))
    return name


def filter_reason_counts(con: duckdb.DuckDBPyConnection, config: FilterConfig) -> list[dict]:
    return _rows(run_sql(con, "cn/filter_reason_counts.sql", {"filter_config": config.key}))
