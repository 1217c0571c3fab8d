"""The evaluation store: every benchmark's runs, per-item outputs and metrics in eval.runs,
eval.item_outputs and eval.metrics, one run id function, and the exported files of a run.

A run is identified by what it evaluated and how (task, system, the dataset's content hash and the
run's parameters): re-running the same configuration replaces its rows, never duplicates them.
"""
from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from caseforge.outputs import replacing_file, write_text_atomically
from caseforge.warehouse.statements import run_sql, sql_text, transaction

CONTENT_GATE = "rejected by the content gate"


@dataclass
class ItemResult:
    item_id: str
    label: str | None
    gold: dict
    predicted: dict
    scores: dict[str, float] = field(default_factory=dict)
    status: str = "ok"           # ok | failed | skipped
    reason: str | None = None


def gate_outputs(con: duckdb.DuckDBPyConnection, run_id: int | None, suite: str, items: list[ItemResult],
                 columns: dict[str, str], failed_scores: dict[str, float] | None = None) -> list[ItemResult]:
    """What a model wrote for the items through the content gate (expectations/<suite>.json on the columns
    {column: key of `predicted`}, plus item_id): an item whose output breaks a rule becomes a failed item with the
    rules as its reason and `failed_scores` as its scores (what a failed item scores in this evaluation); the rows
    are quarantined and the validation recorded like any gate's. Items already failed are left as they are."""
    from caseforge import gate

    checked = [i for i in items if i.status != "failed"]
    if not checked:
        return items
    import pandas as pd

    frame = pd.DataFrame({"item_id": [i.item_id for i in checked],
                          **{column: [i.predicted.get(key) for i in checked] for column, key in columns.items()}})
    rejected = gate.rejected_rows(con, run_id, suite, frame, "item_id")
    for item in items:
        if item.item_id in rejected:
            item.status, item.reason = "failed", f"{CONTENT_GATE}: {rejected[item.item_id]}"
            item.scores = dict(failed_scores or {})
    return items


def eval_run_id(task: str, system: str, dataset_sha: str, params: dict) -> str:
    canonical = json.dumps({"task": task, "system": system, "dataset": dataset_sha, "params": params},
                           sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def save_run(con: duckdb.DuckDBPyConnection, run_id: str, task: str, system: str, dataset: str,
             dataset_sha: str, params: dict, items: list[ItemResult], metrics: dict[str, float | None],
             started_at: datetime, backend: str | None = None, model: str | None = None,
             notes: dict[str, str] | None = None) -> None:
    """Replace the run's rows in one transaction (a re-run of the same configuration overwrites).

    `notes`: metric → why its value is missing or how it was made (kept next to the value)."""
    notes = notes or {}
    with transaction(con):
        run_sql(con, "eval/upsert_run.sql", {
            "eval_run_id": run_id, "task": task, "system": system, "dataset": dataset,
            "dataset_sha": dataset_sha, "params": json.dumps(params, sort_keys=True),
            "n_items": len(items), "n_failed": sum(1 for i in items if i.status == "failed"),
            "started_at": started_at, "finished_at": datetime.now(timezone.utc), "backend": backend, "model": model})
        run_sql(con, "eval/clear_outputs.sql", [run_id])
        run_sql(con, "eval/clear_metrics.sql", [run_id])
        con.executemany(sql_text("eval/insert_item.sql"), [
            (run_id, i.item_id, json.dumps(i.gold, ensure_ascii=False), json.dumps(i.predicted, ensure_ascii=False),
             json.dumps(i.scores, ensure_ascii=False), i.status, i.reason) for i in items])
        con.executemany(sql_text("eval/insert_metric.sql"),
                        [(run_id, name, None if value is None else float(value), notes.get(name))
                         for name, value in sorted(metrics.items())])


def load_metrics(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, float | None]:
    rows = run_sql(con, "eval/run_metrics.sql", {"eval_run_id": run_id}).fetchall()
    # counts are stored as DOUBLE; give them back as integers
    return {name: int(value) if value is not None and name.startswith("n") and float(value).is_integer() else value
            for name, value, _note in rows}


def load_notes(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, str]:
    return {name: note for name, _value, note in run_sql(con, "eval/run_metrics.sql", {"eval_run_id": run_id})
            .fetchall() if note}


def latest_runs(con: duckdb.DuckDBPyConnection, task: str) -> list[dict]:
    """The latest run of each configuration of `task`, each with its metrics and notes."""
    runs: dict[str, dict] = {}
    for run_id, system, backend, model, params, dataset, n_items, n_failed, metric, value, note in run_sql(
            con, "eval/latest_runs_metrics.sql", {"task": task}).fetchall():
        run = runs.setdefault(run_id, {"eval_run_id": run_id, "system": system, "backend": backend, "model": model,
                                       "params": json.loads(params), "dataset": dataset, "n_items": n_items,
                                       "n_failed": n_failed, "metrics": {}, "notes": {}})
        run["metrics"][metric] = value
        if note:
            run["notes"][metric] = note
    return list(runs.values())


def export_run(out_dir: Path, run_id: str, header: dict, items: list[ItemResult], metrics: dict[str, float]) -> list[Path]:
    """<out_dir>/<run_id>.metrics.json (header + metrics) and <run_id>.items.csv."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics_path = out_dir / f"{run_id}.metrics.json"
    write_text_atomically(metrics_path, json.dumps({**header, "eval_run_id": run_id, "metrics": metrics}, indent=1,
                                                   sort_keys=True))
    items_path = out_dir / f"{run_id}.items.csv"
    score_names = sorted({name for i in items for name in i.scores})
    with replacing_file(items_path, None, "the items CSV") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "label", "status", "reason", "gold", "predicted", *score_names])
        for i in items:
            writer.writerow([i.item_id, i.label, i.status, i.reason or "", json.dumps(i.gold), json.dumps(i.predicted),
                             *[i.scores.get(name, "") for name in score_names]])
    return [metrics_path, items_path]
