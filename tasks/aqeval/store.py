"""eval.aquaechr_* rows, the markdown report (Table 3 shape) and the exported CSV."""
from __future__ import annotations

import csv
import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from caseforge.tasks.aqeval.metrics import TABLE_METRICS
from caseforge.tasks.aqeval.scoring import ScoredItem
from caseforge.warehouse import run_sql, transaction

REPORT_COLUMNS = (("rouge_l", "R-L"), ("bertscore_f1", "BERTScore"), ("claim_recall", "Claim NLI"),
                  ("citation_faithfulness", "Cit. faithful"), ("citation_f1", "Cit. EM F1"),
                  ("evidence_nli", "Evid. NLI"), ("citations_per_query", "#Cit/query"))
PERCENT = {m for m, _ in REPORT_COLUMNS} - {"citations_per_query"}


def run_id_for(system: str, llm: str | None, model: str | None, dataset_sha: str, params: dict) -> str:
    canonical = json.dumps({"system": system, "llm": llm, "model": model, "dataset": dataset_sha, "params": params},
                           sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def save_run(con: duckdb.DuckDBPyConnection, run: dict, scored: list[ScoredItem], metrics: dict,
             notes: dict[str, str]) -> None:
    """Replace the run's rows in one transaction (re-running a configuration overwrites, never duplicates)."""
    with transaction(con):
        run_sql(con, "aqeval/upsert_run.sql", {**run, "params": json.dumps(run["params"], sort_keys=True),
                                               "finished_at": datetime.now(timezone.utc)})
        run_sql(con, "aqeval/clear_outputs.sql", {"run_id": run["run_id"]})
        run_sql(con, "aqeval/clear_metrics.sql", {"run_id": run["run_id"]})
        for s in scored:
            out = s.output
            citations = {"passages": sorted({p for x in out.sentences for p in x.valid_passages}),
                         "invalid_docs": [c.doc for x in out.sentences for c in x.citations if not c.valid]}
            run_sql(con, "aqeval/insert_output.sql", {
                "run_id": run["run_id"], "item_id": s.item.item_id, "question": s.item.question,
                "answer": out.answer, "shown": json.dumps(out.shown), "citations": json.dumps(citations),
                "sentences": json.dumps(s.sentences_json(), ensure_ascii=False),
                "gold_citations": json.dumps(s.item.gold),
                "scores": json.dumps({**s.scores, **({"trace": out.trace} if out.trace else {})}, ensure_ascii=False),
                "status": out.status, "reason": out.reason})
        for metric, value in sorted(metrics.items()):
            run_sql(con, "aqeval/insert_metric.sql", {"run_id": run["run_id"], "metric": metric, "value": value,
                                                      "note": notes.get(metric)})


def _cell(metric: str, value) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.1f}" if metric in PERCENT else f"{value:.1f}"


def write_report(con: duckdb.DuckDBPyConnection, out_dir: Path) -> tuple[Path, Path]:
    """Markdown (one table per dataset: a row per system × model, Table 3 columns, ×100) and a long CSV of
    every stored metric of the latest run of each configuration."""
    rows = run_sql(con, "aqeval/report_rows.sql").fetchall()
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out_dir / "aquaechr_metrics.csv", out_dir / "aquaechr_report.md"
    header = ["run_id", "system", "llm", "model", "nli", "bertscore_model", "dataset", "corpus", "n_items",
              "n_failed", "metric", "value", "note"]
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    runs: dict[str, dict] = {}
    for row in rows:
        record = dict(zip(header, row))
        run = runs.setdefault(record["run_id"], {**record, "metrics": {}, "notes": {}})
        run["metrics"][record["metric"]] = record["value"]
        if record["note"]:
            run["notes"][record["metric"]] = record["note"]
    lines = ["# AQuAECHR attributed QA — automatic metrics", "",
             "Scores ×100 except #Cit/query. MAUVE (fluency) is not computed. '–' = not applicable or skipped.", ""]
    for dataset in sorted({r["dataset"] for r in runs.values()}):
        group = [r for r in runs.values() if r["dataset"] == dataset]
        lines += [f"## {dataset}", "", f"Corpus: {group[0]['corpus']}", "",
                  "| System | Model | NLI | n | failed | " + " | ".join(label for _, label in REPORT_COLUMNS) + " |",
                  "|---" * (5 + len(REPORT_COLUMNS)) + "|"]
        for r in sorted(group, key=lambda r: (r["system"], r["model"] or "")):
            cells = [_cell(m, r["metrics"].get(m)) for m, _ in REPORT_COLUMNS]
            lines.append(f"| {r['system']} | {r['model']} ({r['llm']}) | {r['nli']} | {r['n_items']} | "
                         f"{r['n_failed']} | " + " | ".join(cells) + " |")
        notes = sorted({f"{m}: {n}" for r in group for m, n in r["notes"].items()})
        bert = sorted({str(r["bertscore_model"]) for r in group})
        lines += ["", f"BERTScore model: {', '.join(bert)} (greedy token matching, no idf, no rescaling; "
                  "not the paper's t5-large, so not comparable to its numbers)."] + [f"- {n}" for n in notes] + [""]
    md_path.write_text("\n".join(lines), encoding="utf-8")
    return md_path, csv_path


__all__ = ["REPORT_COLUMNS", "TABLE_METRICS", "run_id_for", "save_run", "write_report"]
