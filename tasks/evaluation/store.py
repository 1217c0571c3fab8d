"""Evaluation runs in eval.* and exported files (metrics JSON, per-item CSV)."""
from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from caseforge.warehouse import run_sql, sql_text, transaction


@dataclass
class ItemResult:
    item_id: str
    label: str | None
    gold: dict
    predicted: dict
    scores: dict[str, float] = field(default_factory=dict)
    status: str = "ok"           # ok | failed | skipped
    reason: str | None = None


def eval_run_id(task: str, system: str, dataset_sha: str, params: dict) -> str:
    canonical = json.dumps({"task": task, "system": system, "dataset": dataset_sha, "params": params},
                           sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def save_run(con: duckdb.DuckDBPyConnection, run_id: str, task: str, system: str, dataset: str,
             dataset_sha: str, params: dict, items: list[ItemResult], metrics: dict[str, float],
             started_at: datetime) -> None:
    """Replace the run's rows in one transaction (a re-run of the same configuration overwrites)."""
    with transaction(con):
        run_sql(con, "evaluation/upsert_run.sql", {
            "eval_run_id": run_id, "task": task, "system": system, "dataset": dataset,
            "dataset_sha": dataset_sha, "params": json.dumps(params, sort_keys=True),
            "n_items": len(items), "n_failed": sum(1 for i in items if i.status == "failed"),
            "started_at": started_at, "finished_at": datetime.now(timezone.utc)})
        run_sql(con, "evaluation/clear_outputs.sql", [run_id])
        run_sql(con, "evaluation/clear_metrics.sql", [run_id])
        con.executemany(sql_text("evaluation/insert_item.sql"), [
            (run_id, i.item_id, json.dumps(i.gold), json.dumps(i.predicted), json.dumps(i.scores), i.status, i.reason)
            for i in items])
        con.executemany(sql_text("evaluation/insert_metric.sql"),
                        [(run_id, name, float(value)) for name, value in metrics.items()])


def load_metrics(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, float]:
    rows = run_sql(con, "evaluation/run_metrics.sql", {"eval_run_id": run_id}).fetchall()
    # counts are stored as DOUBLE; give them back as integers
    return {name: int(value) if name.startswith("n") and float(value).is_integer() else value for name, value in rows}


def export_run(out_dir: Path, run_id: str, header: dict, items: list[ItemResult], metrics: dict[str, float]) -> list[Path]:
    """<out_dir>/<run_id>.metrics.json (header + metrics) and <run_id>.items.csv."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics_path = out_dir / f"{run_id}.metrics.json"
    metrics_path.write_text(json.dumps({**header, "eval_run_id": run_id, "metrics": metrics}, indent=1, sort_keys=True))
    items_path = out_dir / f"{run_id}.items.csv"
    score_names = sorted({name for i in items for name in i.scores})
    with items_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "label", "status", "reason", "gold", "predicted", *score_names])
        for i in items:
            writer.writerow([i.item_id, i.label, i.status, i.reason or "", json.dumps(i.gold), json.dumps(i.predicted),
                             *[i.scores.get(name, "") for name in score_names]])
    return [metrics_path, items_path]
