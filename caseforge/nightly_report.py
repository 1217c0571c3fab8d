"""The nightly's summary: a Markdown page (counts per stage, quality, plots) and Prefect artifacts."""
from __future__ import annotations

import duckdb

from caseforge.release import _md_table
from caseforge.warehouse import run_sql

SUMMARY_COLUMNS = ["stage", "name", "status", "fetched", "new_payloads", "new", "changed", "quarantined",
                   "llm_calls", "cache_hits", "duration_s", "note"]
QUALITY_COLUMNS = ["table_name", "suite", "validated_at", "success", "rows_checked", "rows_failed", "batch_rejected"]


def quality_rows(con: duckdb.DuckDBPyConnection) -> list[dict]:
    cursor = run_sql(con, "ops/latest_quality.sql", [None, None])
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def summary_table(result) -> list[dict]:
    return [o.summary_row() for o in result.outcomes]


def quality_markdown(quality: list[dict]) -> str:
    if not quality:
        return "_No quality-gate results yet._"
    return _md_table(QUALITY_COLUMNS, [[q.get(c) for c in QUALITY_COLUMNS] for q in quality])


def summary_markdown(result, quality: list[dict], image_links: dict[str, str] | None = None) -> str:
    """`image_links`: plot name -> URL or data: URI (default: the PNG file names next to summary.md)."""
    verdict = "all stages ok" if result.ok else f"{len(result.failures())} problem(s)"
    parts = [f"# Nightly run {result.run_id}: {verdict}", "",
             _md_table(SUMMARY_COLUMNS, [[row[c] for c in SUMMARY_COLUMNS] for row in summary_table(result)]), ""]
    if result.failures():
        parts += ["## Problems", ""] + [f"- {line}" for line in result.failures()[:100]] + [""]
    parts += ["## Quality gate (latest result per table)", "", quality_markdown(quality), ""]
    if result.plots:
        parts += ["## Plots", ""]
        for name, (title, path) in sorted(result.plots.items()):
            link = (image_links or {}).get(name, path.name)
            parts += [f"### {title}", "", f"![{title}]({link})", ""]
    return "\n".join(parts)


def publish_artifacts(result, quality: list[dict]) -> None:
    """Prefect artifacts of the run (no-op outside a flow run): summary table, quality, plots."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact
    from prefect.context import FlowRunContext

    from caseforge.plots import data_uri

    if FlowRunContext.get() is None:
        return
    verdict = "ok" if result.ok else "FAILED: " + "; ".join(result.failures()[:5])
    create_table_artifact(key="nightly-summary", table=summary_table(result),
                          description=f"Nightly run {result.run_id}: {verdict}")
    create_markdown_artifact(key="nightly-quality", markdown="## Quality gate\n\n" + quality_markdown(quality),
                             description="latest ops.quality_results per table")
    if result.plots:
        links = {name: data_uri(path.read_bytes()) for name, (_, path) in result.plots.items()}
        body = "\n\n".join(f"### {title}\n\n![{title}]({links[name]})\n\nfile: `{path}`"
                           for name, (title, path) in sorted(result.plots.items()))
        create_markdown_artifact(key="nightly-plots", markdown=body, description="plots of this run")
