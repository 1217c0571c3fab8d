"""AQuAECHR evaluation runs in the evaluation store (caseforge.evalstore), the markdown report (the
paper's Table 3 shape) and the exported CSV."""
from __future__ import annotations

import csv
from pathlib import Path

import duckdb

from caseforge import evalstore
from caseforge.evalstore import ItemResult
from caseforge.outputs import replacing_file, write_text_atomically
from caseforge.tasks.aquaechr.eval.metrics import TABLE_METRICS
from caseforge.tasks.aquaechr.eval.scoring import ScoredItem

TASK = "aquaechr"

REPORT_COLUMNS = (("rouge_l", "R-L"), ("bertscore_f1", "BERTScore"), ("claim_recall", "Claim NLI"),
                  ("citation_faithfulness", "Cit. faithful"), ("citation_f1", "Cit. EM F1"),
                  ("evidence_nli", "Evid. NLI"), ("citations_per_query", "#Cit/query"))
PERCENT = {m for m, _ in REPORT_COLUMNS} - {"citations_per_query"}


def item_results(scored: list[ScoredItem]) -> list[ItemResult]:
    """Each scored item as a row of eval.item_outputs: the question and gold citations; the answer, the
    passages shown, the citations and per-sentence attribution; the scores (and the system's trace)."""
    results = []
    for s in scored:
        out = s.output
        citations = {"passages": sorted({p for x in out.sentences for p in x.valid_passages}),
                     "invalid_docs": [c.doc for x in out.sentences for c in x.citations if not c.valid]}
        results.append(ItemResult(
            s.item.item_id, None, {"question": s.item.question, "citations": s.item.gold},
            {"answer": out.answer, "shown": out.shown, "citations": citations, "sentences": s.sentences_json()},
            {**s.scores, **({"trace": out.trace} if out.trace else {})}, out.status, out.reason))
    return results


def _cell(metric: str, value) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.1f}" if metric in PERCENT else f"{value:.1f}"


def write_report(con: duckdb.DuckDBPyConnection, out_dir: Path) -> tuple[Path, Path]:
    """Markdown (one table per dataset: a row per system × model, Table 3 columns, ×100) and a long CSV of
    every stored metric of the latest run of each configuration."""
    runs = {}
    for run in evalstore.latest_runs(con, TASK):
        params = run["params"]
        runs[run["eval_run_id"]] = {**run, "run_id": run["eval_run_id"], "llm": run["backend"],
                                    "nli": params.get("nli"), "bertscore_model": params.get("bertscore_model"),
                                    "corpus": params.get("corpus")}
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out_dir / "aquaechr_metrics.csv", out_dir / "aquaechr_report.md"
    header = ["run_id", "system", "llm", "model", "nli", "bertscore_model", "dataset", "corpus", "n_items",
              "n_failed", "metric", "value", "note"]
    with replacing_file(csv_path, None, "the metrics CSV") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for run in runs.values():
            for metric, value in sorted(run["metrics"].items()):
                writer.writerow([run[h] for h in header[:10]] + [metric, value, run["notes"].get(metric)])
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
    write_text_atomically(md_path, "\n".join(lines))
    return md_path, csv_path


__all__ = ["REPORT_COLUMNS", "TABLE_METRICS", "item_results", "write_report"]
