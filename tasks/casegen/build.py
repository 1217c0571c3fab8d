"""Build stage: source rows (curated.cn_judgments or a CaseGen-format JSONL) → curated.casegen_items."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pandas as pd

from caseforge.gate import quarantine
from caseforge.load import CuratedTable, gate_and_load
from caseforge.stage_report import StageReport
from caseforge.tasks.casegen.items import Skipped, TaskItem, build_items
from caseforge.warehouse.statements import run_sql, run_sql_over_rows, table_exists

TABLE = "casegen_items"


class SourceTableMissing(RuntimeError):
    pass


def select_source_rows(con: duckdb.DuckDBPyConnection, limit: int | None) -> pd.DataFrame:
    """Gold sections from curated.cn_judgments (the latest representative selection, when there is one)."""
    if not table_exists(con, "curated.cn_judgments"):
        raise SourceTableMissing(
            "curated.cn_judgments does not exist in this warehouse: ingest Chinese judgments first, "
            "or build from a CaseGen-format file with --from-file")
    has_selection = run_sql(con, "casegen/count_representatives.sql").fetchone()[0] > 0
    statement = "casegen/select_representative_sources.sql" if has_selection else "casegen/select_sources.sql"
    rows = run_sql(con, statement, {"limit": limit}).df()
    if rows.empty:
        raise SourceTableMissing(
            "curated.cn_judgments holds no complete ordinary-procedure judgment: run `caseforge ingest cn "
            "--from-dir DIR` first, or build from a CaseGen-format file with --from-file")
    return rows


def read_jsonl_records(con, run_id: int | None, path: Path, report: StageReport, limit: int | None = None
                       ) -> list[dict]:
    """CaseGen-format records; an unreadable line is quarantined with its line number, the rest go on."""
    if not path.exists():
        raise FileNotFoundError(f"CaseGen file not found: {path}")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            reason = f"{path.name}:{number}: not a CaseGen record ({exc})"
            quarantine(con, run_id, TABLE, "read", reason, source_key=f"{path.name}:{number}",
                       row_data={"line": line[:2000]})
            report.add("quarantined")
            report.fail(reason)
            continue
        records.append(record)
        if limit is not None and len(records) >= limit:
            break
    report.add("records_read", len(records))
    return records


def items_frame(items: list[TaskItem]) -> pd.DataFrame:
    rows = []
    for item in items:
        inputs = item.inputs_json()
        evidence = item.inputs.get("evidence", [])
        rows.append({
            "item_id": item.item_id, "doc_id": item.doc_id, "task": item.task, "inputs": inputs,
            "reference": item.reference, "source": item.source, "evidence_count": len(evidence),
            "evidence_with_content": sum(1 for e in evidence if e.get("content")),
            "content_sha256": hashlib.sha256((inputs + "\x1f" + item.reference).encode()).hexdigest(),
        })
    columns = ["item_id", "doc_id", "task", "inputs", "reference", "source", "evidence_count",
               "evidence_with_content", "content_sha256"]
    return pd.DataFrame(rows, columns=columns)


def record_skips(con, run_id: int | None, source: str, skipped: list[Skipped], report: StageReport) -> None:
    rows = []
    for skip in skipped:
        rows.append({"source": source, "doc_id": skip.doc_id, "task": skip.task, "reason": skip.reason,
                     "run_id": run_id})
        report.add(f"skipped_{skip.task if skip.task != '*' else 'record'}")
    run_sql_over_rows(con, "casegen/record_skip.sql", rows)


def build_and_load(con, run_id: int | None, records, source: str, report: StageReport) -> list[TaskItem]:
    items, skipped = build_items(records, source=source)
    record_skips(con, run_id, source, skipped, report)
    for item in items:
        report.add(f"items_{item.task}")
    outcome = gate_and_load(con, run_id, items_frame(items),
                            CuratedTable(TABLE, "casegen/curate_items.sql", "item_id", content_column="content_sha256"))
    outcome.report_to(report, "items_loaded", changes_prefix="items_")
    return items
