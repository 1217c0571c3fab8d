"""The nightly's summary: a Markdown page (counts per stage, quality, plots), its run folder, and the
artifacts the UI shows. PLOTS: name → function(con) → (title, png bytes) or None."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable

import duckdb

from caseforge.artifacts import publish_link, publish_markdown, publish_table
from caseforge.atomic import link_atomically
from caseforge.plots import bar_chart, box_plot, data_uri, grouped_bars, histogram_panels
from caseforge.release import md_table
from caseforge.stage_report import known_problems_of
from caseforge.warehouse.statements import run_sql, table_exists

log = logging.getLogger(__name__)

LATEST = "latest"        # <db name>-runs/latest: the newest nightly's run folder

SUMMARY_COLUMNS = ["stage", "name", "status", "fetched", "new_payloads", "new", "changed", "quarantined",
                   "known_problems", "llm_calls", "cache_hits", "duration_s", "note"]
QUALITY_COLUMNS = ["table_name", "suite", "validated_at", "success", "rows_checked", "rows_failed", "batch_rejected",
                   "batches"]


def quality_rows(con: duckdb.DuckDBPyConnection) -> list[dict]:
    cursor = run_sql(con, "ops/latest_quality.sql", [None, None])
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def summary_table(result) -> list[dict]:
    return [o.summary_row() for o in result.outcomes]


def quality_markdown(quality: list[dict]) -> str:
    if not quality:
        return "_No quality-gate results yet._"
    return md_table(QUALITY_COLUMNS, [[q.get(c) for c in QUALITY_COLUMNS] for q in quality])


NOTHING_REBUILT = "nothing rebuilt (no builder, evaluation or release had a changed input)"


def verdict(result) -> str:
    """One line on the whole run: ok or how many problems, and whether anything was rebuilt."""
    said = "all stages ok" if result.ok else f"{len(result.failures())} problem(s)"
    return f"{said}, {NOTHING_REBUILT}" if not result.rebuilt() else said


def known_problem_lines(result) -> list[str]:
    """'source cn: known problems: 1 record in 1 payload, since run 3', one per stage that counted any."""
    lines = []
    for outcome in result.outcomes:
        known = known_problems_of(outcome.counts)
        if known:
            lines.append(f"{outcome.stage} {outcome.name}: {known}")
    return lines


def summary_markdown(result, quality: list[dict], image_links: dict[str, str] | None = None) -> str:
    """`image_links`: plot name -> URL or data: URI (default: the PNG file names next to summary.md)."""
    parts = [f"# Nightly run {result.run_id}: {verdict(result)}", "",
             md_table(SUMMARY_COLUMNS, [[row[c] for c in SUMMARY_COLUMNS] for row in summary_table(result)]), ""]
    if result.failures():
        parts += ["## Problems", ""] + [f"- {line}" for line in result.failures()[:100]] + [""]
    known = known_problem_lines(result)
    if known:
        parts += ["## Known problems (quarantined before, unchanged since: not failures of this run)", ""] + \
            [f"- {line}" for line in known] + [""]
    parts += ["## Quality gate (per table, over all batches of its current data)", "", quality_markdown(quality), ""]
    if result.links:
        parts += ["## Links", ""] + [f"- [{description}]({uri})" for _, (uri, description) in
                                     sorted(result.links.items())] + [""]
    if result.plots:
        parts += ["## Plots", ""]
        for name, (title, path) in sorted(result.plots.items()):
            link = (image_links or {}).get(name, path.name)
            parts += [f"### {title}", "", f"![{title}]({link})", ""]
    return "\n".join(parts)


def publish_artifacts(result, quality: list[dict]) -> None:
    """The run's artifacts: summary table, quality, plots, and links to the release folders, the quality
    table's Parquet mirror and the run's folder."""
    # the verdict in plain words: the problems themselves (rule names, JSON) are in the rows' notes and summary.md
    verdict = "ok" if result.ok else (f"FAILED: {', '.join(f'{o.stage} {o.name}' for o in result.outcomes if o.failed)}"
                                      f" ({len(result.failures())} problem(s), listed in the rows' notes)")
    publish_table("nightly-summary", summary_table(result), f"Nightly run {result.run_id}: {verdict}")
    publish_markdown("nightly-quality", "## Quality gate\n\n" + quality_markdown(quality),
                     "ops.quality_results per table, summed over the batches of the run that last validated it")
    if result.plots:
        links = {name: data_uri(path.read_bytes()) for name, (_, path) in result.plots.items()}
        body = "\n\n".join(f"### {title}\n\n![{title}]({links[name]})\n\nfile: `{path}`"
                           for name, (title, path) in sorted(result.plots.items()))
        publish_markdown("nightly-plots", body, "plots of this run")
    for key, (uri, description) in sorted(result.links.items()):
        publish_link(f"nightly-{key}", uri, description)


def plot_rows(con: duckdb.DuckDBPyConnection, statement: str, *tables: str) -> list[tuple]:
    """The rows a plot draws (sql/<statement>); none when a table it reads is absent (a warehouse that never
    built that benchmark)."""
    if not all(table_exists(con, table) for table in tables):
        return []
    return run_sql(con, statement).fetchall()


def plot_scotus_decades(con: duckdb.DuckDBPyConnection):
    rows = plot_rows(con, "ops/decade_counts.sql", "curated.scotus_cases")
    if not rows:
        return None
    return "U.S. Supreme Court cases per decade of decision", bar_chart(dict(rows), "cases per decade", "decade")


def plot_casefacts_labels(con: duckdb.DuckDBPyConnection):
    rows = plot_rows(con, "casefacts/plot_labels.sql", "curated.casefacts_claims")
    if not rows:
        return None
    return "CaseFacts claims per label", bar_chart(dict(rows), "CaseFacts claims per label", "label", "claims")


def plot_casefacts_similarity(con: duckdb.DuckDBPyConnection):
    """The similarity of the judged calibration pairs per kind, with the window calibrated from them."""
    rows = plot_rows(con, "casefacts/plot_similarities.sql", "build.casefacts_calibration_samples",
                     "build.casefacts_windows")
    if not rows:
        return None
    windows = {kind: (low, high) for kind, low, high, *_ in run_sql(con, "casefacts/release_windows.sql").fetchall()}
    by_kind: dict[str, list[float]] = {}
    for kind, similarity in rows:
        by_kind.setdefault(kind, []).append(similarity)
    panels = [(kind, values, windows.get(kind)) for kind, values in sorted(by_kind.items())]
    return ("CaseFacts claim-pair similarity with the calibrated windows (dashed)",
            histogram_panels(panels, "claim-pair similarity of the judged calibration samples", bins=20,
                             xlabel="cosine similarity", ylabel="pairs"))


def plot_casefacts_lengths(con: duckdb.DuckDBPyConnection):
    rows = plot_rows(con, "casefacts/plot_lengths.sql", "curated.casefacts_claims")
    if not rows:
        return None
    groups: dict[str, list[int]] = {}
    for label, words in rows:
        groups.setdefault(label, []).append(words)
    return "CaseFacts claim length by label", box_plot(groups, "CaseFacts claim length by label", "words", "label")


def _score_bars(rows, title: str, scale: range):
    series: dict[str, dict[str, int]] = {}
    for dimension, score, n in rows:
        series.setdefault(dimension, {})[str(score)] = int(n)
    return title, grouped_bars(series, [str(s) for s in scale], title, "score", "answers")


def plot_aquaechr_judge_scores(con: duckdb.DuckDBPyConnection):
    """The build's quality judge (1-5 per dimension) over every candidate pair, kept or not."""
    rows = plot_rows(con, "aquaechr/plot_judge_scores.sql", "curated.aquaechr_qa")
    if not rows:
        return None
    return _score_bars(rows, "AQuAECHR judge scores per dimension", range(1, 6))


def plot_casegen_judge_scores(con: duckdb.DuckDBPyConnection):
    """The judge's scores (1-10 per dimension) in the latest CaseGen evaluation run of the store."""
    rows = plot_rows(con, "casegen/plot_judge_scores.sql", "eval.runs", "eval.item_outputs")
    if not rows:
        return None
    system = rows[0][0]
    return _score_bars([r[1:] for r in rows], f"CaseGen judge scores per dimension ({system})", range(1, 11))


PLOTS: dict[str, Callable[[duckdb.DuckDBPyConnection], tuple[str, bytes] | None]] = {
    "scotus_decades": plot_scotus_decades,
    "casefacts_labels": plot_casefacts_labels,
    "casefacts_similarity": plot_casefacts_similarity,
    "casefacts_lengths": plot_casefacts_lengths,
    "aquaechr_judge_scores": plot_aquaechr_judge_scores,
    "casegen_judge_scores": plot_casegen_judge_scores,
}


def write_run_dir(con, result, plots: dict) -> None:
    """summary.json, summary.md and the plots' PNG files in the run's folder."""
    result.run_dir.mkdir(parents=True, exist_ok=True)
    for name, plot in sorted(plots.items()):
        try:
            made = plot(con)
        except Exception as exc:  # a plot is never worth failing the night for; say so in the summary
            log.warning("plot %s failed: %s", name, exc)
            continue
        if made:
            title, png = made
            path = result.run_dir / f"{name}.png"
            path.write_bytes(png)
            result.plots[name] = (title, path)
    (result.run_dir / "summary.json").write_text(json.dumps(result.to_dict(), indent=1, default=str))
    (result.run_dir / "summary.md").write_text(summary_markdown(result, quality_rows(con)))
    point_latest_at(result.run_dir)


def point_latest_at(run_dir: Path) -> None:
    """`latest` beside the run folders (`<db name>-runs/latest`) links to this run's folder: replaced in one
    step (a symlink renamed over the old one), so a reader never finds it missing or half-written."""
    link_atomically(run_dir.parent / LATEST, run_dir.name, folder=True)
