"""Leaderboards (one row per model; per task: judge dimensions, overall, ROUGE-L, BERTScore) and plots, read
from the evaluation store: the runs named by their ids (one per model of the configuration evaluated)."""
from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pandas as pd

from caseforge.outputs import replacing_file, write_text_atomically
from caseforge.tasks.casegen.eval import store
from caseforge.tasks.casegen.eval.judge import dimensions_for
from caseforge.tasks.casegen.items import TASKS

# the metric columns shown next to the judge's scores, as percentages like the paper's Table 2
METRIC_COLUMNS = ("rougeL_char_f1", "rougeL_word_f1", "rougeL_compat_f1", "bleu4", "bertscore_f1")


def leaderboard_long(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pd.DataFrame:
    return store.leaderboard_long(con, run_ids)


def leaderboard_wide(long: pd.DataFrame) -> pd.DataFrame:
    """Rows: models. Columns: '<task>/<measure>' in task order; judge scores 1-10, metrics in %."""
    if long.empty:
        return pd.DataFrame()
    frame = long.copy()
    is_metric = frame["scorer"] == "metric"
    frame.loc[is_metric, "mean"] = frame.loc[is_metric, "mean"] * 100.0
    frame["column"] = frame["task"] + "/" + frame["measure"]
    wide = frame.pivot_table(index="model", columns="column", values="mean", aggfunc="first", dropna=False)
    ordered = []
    for task in TASKS:
        for ident, *_ in dimensions_for(task):
            ordered.append(f"{task}/{ident}")
        ordered.extend(f"{task}/{metric}" for metric in METRIC_COLUMNS)
    return wide[[c for c in ordered if c in wide.columns]]


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.2f}"


def markdown_tables(wide: pd.DataFrame, notes: list[str]) -> str:
    """One markdown table per task (the judge's dimensions, overall, then the metrics)."""
    if wide.empty:
        return "_no scores yet_\n"
    parts = []
    for task in TASKS:
        columns = [c for c in wide.columns if c.startswith(f"{task}/")]
        if not columns:
            continue
        header = ["model"] + [c.split("/", 1)[1] for c in columns]
        lines = [f"### {task}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for model, row in wide[columns].iterrows():
            lines.append("| " + " | ".join([str(model)] + [_cell(row[c]) for c in columns]) + " |")
        parts.append("\n".join(lines))
    notes_text = "\n".join(f"- {note}" for note in notes)
    return "\n\n".join(parts) + ("\n\nNotes:\n" + notes_text if notes else "") + "\n"


def export(wide: pd.DataFrame, markdown: str, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out_dir / "casegen_leaderboard.csv", out_dir / "casegen_leaderboard.md"
    with replacing_file(csv_path, None, "the leaderboard CSV") as handle:
        wide.to_csv(handle, float_format="%.4f")
    write_text_atomically(md_path, markdown)
    return [csv_path, md_path]


def plot_score_distributions(con: duckdb.DuckDBPyConnection, run_ids: list[str], out_dir: Path) -> list[Path]:
    """One PNG per task: histogram of the judge's overall score per model (1..10, bins of one point)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores = store.overall_scores(con, run_ids)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for task in TASKS:
        subset = scores[scores["task"] == task]
        if subset.empty:
            continue
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for model, group in subset.groupby("model"):
            ax.hist(group["score"], bins=[b + 0.5 for b in range(0, 11)], alpha=0.6, label=str(model))
        ax.set_xlim(0.5, 10.5)
        ax.set_xlabel("judge overall score (1-10)")
        ax.set_ylabel("generations")
        ax.set_title(f"CaseGen {task}: judge score distribution")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out_dir / f"casegen_scores_{task}.png"
        with replacing_file(path, None, "a plot", binary=True) as handle:
            fig.savefig(handle, dpi=100, format="png")
        plt.close(fig)
        paths.append(path)
    return paths
