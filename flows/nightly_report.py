"""The nightly's summary: a Markdown page (counts per stage, quality, plots), its run folder, and the
artifacts the UI shows. PLOTS: name → function(con) → (title, png bytes) or None."""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Callable

import duckdb

from caseforge.artifacts import publish_markdown, publish_table
from caseforge.atomic import link_atomically
from caseforge.plots import bar_chart, box_plot, data_uri, grouped_bars, histogram_panels
from caseforge.release import md_table
from caseforge.stage_report import known_problems_of, table_cell
from caseforge.warehouse.statements import run_sql, table_exists

log = logging.getLogger(__name__)

# How caseforge.load names a row the gate quarantined: "<table> <key column>=<key>: <rule>; <rule>; ..."
RECORD_PROBLEM = re.compile(r"(?P<table>[a-z][a-z0-9_]*) (?P<key_column>[a-z_][a-z0-9_]*)=(?P<key>\S+): (?P<rules>.+)",
                            re.S)

LATEST = "latest"        # <db name>-runs/latest: the newest nightly's run folder

SUMMARY_COLUMNS = ["stage", "name", "status", "fetched", "new_payloads", "new", "changed", "quarantined",
                   "known_problems", "llm_calls", "cache_hits", "prompt_tokens", "completion_tokens", "model_s",
                   "tokens_per_kept", "duration_s", "problems", "note"]
COST_COLUMNS = ["run", "step", "model", "served_model", "calls", "prompt_tokens", "completion_tokens", "model_s"]
# The night's problems, each once: the stage, the record (a quarantined row's table and key), the value that broke
# a rule, quoted and shortened, beside each rule it broke.
PROBLEM_COLUMNS = ["stage", "record", "value", "rule"]
# The summary artifact's columns: what a person reads first (the status, the note, the problems, the LLM calls)
# before the counts, so a screen that cuts the table keeps them.
SUMMARY_ARTIFACT_COLUMNS = ["stage", "name", "status", "note", "problems", "llm_calls", "new", "changed",
                            "quarantined", "known_problems", "fetched", "new_payloads", "cache_hits", "prompt_tokens",
                            "completion_tokens", "model_s", "tokens_per_kept", "duration_s"]
TEXT_SHOWN = 60                # characters of a quarantined value quoted beside its rule
QUALITY_COLUMNS = ["table_name", "suite", "validated_at", "success", "rows_checked", "rows_failed", "batch_rejected",
                   "batches"]


def quality_rows(con: duckdb.DuckDBPyConnection) -> list[dict]:
    cursor = run_sql(con, "ops/latest_quality.sql", [None, None])
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def summary_table(result) -> list[dict]:
    return [o.summary_row() for o in result.outcomes]


# One rule as caseforge.gate describes it: "expect_... [on <column>] [{kwargs}]"
_RULE = re.compile(r"(?P<rule>expect_[a-z0-9_]+)(?: on (?P<column>\w+))?(?: (?P<kwargs>\{.*\}))?", re.S)


def quoted(value, limit: int = TEXT_SHOWN) -> str:
    """A quarantined value as the summary quotes it: one line, cut to `limit` characters."""
    text = " ".join(str(value).split())
    return f'"{text if len(text) <= limit else text[:limit - 1] + "…"}"'


def _rule_column(rule: str) -> str | None:
    """The column whose value broke `rule` (a pair rule: its first column)."""
    found = _RULE.fullmatch(rule)
    if found is None:
        return None
    if found["column"]:
        return found["column"]
    try:
        return json.loads(found["kwargs"] or "{}").get("column_A")
    except ValueError:
        return None


def _quarantined_rows(con: duckdb.DuckDBPyConnection, run_id: int, records: list[tuple[str, str]]) -> dict:
    """(table, key) -> the row data of that record as the night quarantined it ({} when none is kept)."""
    if not records:
        return {}
    found = {}
    for table, key, row_data in run_sql(con, "ops/quarantined_row_data.sql",
                                        [sorted({f"{t} {k}" for t, k in records}), run_id]).fetchall():
        try:
            data = json.loads(row_data) if row_data else {}
        except ValueError:
            data = {}
        found[(table, key)] = data if isinstance(data, dict) else {}
    return found


MAX_PROBLEMS_LISTED = 200      # problems listed by name in summary.md, the artifact and the command's table


def problem_rows(con: duckdb.DuckDBPyConnection, result, limit: int = MAX_PROBLEMS_LISTED) -> list[dict]:
    """The night's first `limit` problems, each once (PROBLEM_COLUMNS), one row per rule it broke: a row the
    gate quarantined is named by its table and key, each rule beside the value that broke it (read back from
    ops.quarantine); any other problem is its reason."""
    problems = [(f"{o.stage} {o.name}", reason, RECORD_PROBLEM.fullmatch(reason))
                for o in result.outcomes if o.failed for reason in o.failures or [o.status]][:limit]
    quarantined = _quarantined_rows(con, result.run_id, [(f["table"], f["key"]) for _, _, f in problems if f])
    rows = []
    for stage, reason, found in problems:
        if found is None:
            rows.append({"stage": stage, "record": "", "value": "", "rule": reason})
            continue
        data = quarantined.get((found["table"], found["key"]), {})
        record = f"{found['table']} {found['key_column']}={found['key']}"
        for rule in re.split(r"; (?=expect_)", found["rules"]):
            column = _rule_column(rule)
            value = quoted(data[column]) if column in data and data[column] is not None else ""
            rows.append({"stage": stage, "record": record, "value": value, "rule": rule})
    return rows


def problems_once(rows: list[dict]) -> list[list]:
    """Problem rows as a table shows them: a stage, a record and a quoted value each on their first row only."""
    shown, last = [], (None, None, None)
    for row in rows:
        stage = "" if row["stage"] == last[0] else row["stage"]
        same_record = bool(row["record"]) and (row["stage"], row["record"]) == last[:2]
        value = "" if same_record and row["value"] == last[2] else row["value"]
        shown.append([stage, "" if same_record else row["record"], value, row["rule"]])
        last = (row["stage"], row["record"], row["value"])
    return shown


def problems_artifact(rows: list[dict]) -> list[dict]:
    """The problems as the UI's table shows them: each once (problems_once), a rule cut as the terminal's
    table cuts it, so the value that broke it stays on the screen beside it."""
    return [dict(zip(PROBLEM_COLUMNS, row[:-1] + [table_cell(row[-1])])) for row in problems_once(rows)]


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


def cost_rows(con: duckdb.DuckDBPyConnection, run_id: int) -> list[dict]:
    """What the night's LLM calls cost, per stage run, step, model and the model that served (llm/run_costs.sql)."""
    cursor = run_sql(con, "llm/run_costs.sql", {"run": run_id})
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def cost_markdown(costs: list[dict]) -> list[str]:
    """The summary's section on what the night's LLM calls cost (none when it made none)."""
    if not costs:
        return []
    return ["## What the night's LLM calls cost", "",
            "Calls made tonight, as each run recorded them (cache hits cost nothing); `served_model` is the model "
            "that answered, as the endpoint or engine said. `llm stats --run RUN_ID` lists the same.", "",
            md_table(COST_COLUMNS, [[row[c] for c in COST_COLUMNS] for row in costs]), ""]


def source_health_rows(result) -> list[dict]:
    """One row per source the night judged: its health and why (broken rules, then tonight's measures)."""
    return [{"source": o.name, "health": o.status, "why": o.note} for o in result.outcomes if o.stage == "source health"]


def summary_markdown(result, quality: list[dict], image_links: dict[str, str] | None = None,
                     problems: list[dict] | None = None, costs: list[dict] | None = None) -> str:
    """`image_links`: plot name -> URL or data: URI (default: the PNG file names next to summary.md).
    `problems`: problem_rows (default: each failure line as its own row, with no quoted text). `costs`:
    cost_rows."""
    parts = [f"# Nightly run {result.run_id}: {verdict(result)}", "",
             md_table(SUMMARY_COLUMNS, [[row[c] for c in SUMMARY_COLUMNS] for row in summary_table(result)]), ""]
    if result.failures():
        if problems is None:
            problems = [{"stage": line.split(": ", 1)[0], "record": "", "value": "", "rule": line.split(": ", 1)[-1]}
                        for line in result.failures()[:MAX_PROBLEMS_LISTED]]
        parts += ["## Problems", "", md_table(PROBLEM_COLUMNS, problems_once(problems)), ""]
        if len(result.failures()) > MAX_PROBLEMS_LISTED:
            parts += [f"…and {len(result.failures()) - MAX_PROBLEMS_LISTED} more problems, not listed here "
                      "(`caseforge sql` on ops.quarantine)", ""]
    health = source_health_rows(result)
    if health:
        parts += ["## Source health (each source against its earlier nights)", "",
                  md_table(["source", "health", "why"], [[h["source"], h["health"], h["why"]] for h in health]), ""]
    known = known_problem_lines(result)
    if known:
        parts += ["## Known problems (quarantined before, unchanged since: not failures of this run)", ""] + \
            [f"- {line}" for line in known] + [""]
    parts += cost_markdown(costs or [])
    parts += ["## Quality gate (per table, over all batches of its current data)", "", quality_markdown(quality), ""]
    if result.locations:
        parts += ["## Where things are", "", locations_markdown(result.locations), ""]
    if result.plots:
        parts += ["## Plots", ""]
        for name, (title, path) in sorted(result.plots.items()):
            link = (image_links or {}).get(name, path.name)
            parts += [f"### {title}", "", f"![{title}]({link})", ""]
    return "\n".join(parts)


def locations_markdown(locations: dict[str, tuple[str, str]]) -> str:
    """Each place as text a person copies (no link: a browser opens no local path, nor an s3:// URL)."""
    return "\n".join(f"- {description}: `{where}`" for _, (where, description) in sorted(locations.items()))


def artifact_verdict(result) -> str:
    """The summary artifact's description: the verdict, and the failed stages, each in its own line."""
    if result.ok:
        return f"Nightly run {result.run_id}: {verdict(result)}"
    failed = [o for o in result.outcomes if o.failed]
    return (f"Nightly run {result.run_id}: FAILED: {len(failed)} stage(s) failed, {len(result.failures())} "
            "problem(s) (each in nightly-problems): " + "; ".join(o.line() for o in failed))


def publish_summary(result) -> None:
    """The nightly's own artifact, published in the flow run itself (the UI lists a flow run's own artifacts
    before those of its task runs): the verdict, then one row per stage, its note and problems first."""
    publish_table("nightly-summary", [{c: row[c] for c in SUMMARY_ARTIFACT_COLUMNS} for row in summary_table(result)],
                  artifact_verdict(result))


def publish_details(result, quality: list[dict], problems: list[dict] | None = None) -> None:
    """The night's other artifacts (published from its `report` task run, after the summary): the problems, the
    quality gate, the plots, and where its releases, quality results and run folder are."""
    run = f"Nightly run {result.run_id}"
    if problems:
        publish_table("nightly-problems", problems_artifact(problems),
                      f"{run}: each problem once, the value beside each rule it broke")
    health = source_health_rows(result)
    if health:
        unhealthy = [f"{h['source']} {h['health']}" for h in health if h["health"] != "succeeded"]
        publish_table("nightly-source-health", health, f"{run}: source health, "
                      + (", ".join(unhealthy) if unhealthy else "every source as on its earlier nights"))
    publish_markdown("nightly-quality", "## Quality gate\n\n" + quality_markdown(quality),
                     f"{run}: ops.quality_results per table, summed over the batches of the run that last validated it")
    if result.plots:
        links = {name: data_uri(path.read_bytes()) for name, (_, path) in result.plots.items()}
        body = "\n\n".join(f"### {title}\n\n![{title}]({links[name]})\n\nfile: `{path}`"
                            for name, (title, path) in sorted(result.plots.items()))
        publish_markdown("nightly-plots", body, f"{run}: plots")
    if result.locations:
        publish_markdown("nightly-locations", "## Where things are\n\n" + locations_markdown(result.locations),
                         f"{run}: the release folders, the quality results and the run folder, to copy")


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
    (result.run_dir / "summary.md").write_text(summary_markdown(result, quality_rows(con),
                                                                problems=problem_rows(con, result),
                                                                costs=cost_rows(con, result.run_id)))
    point_latest_at(result.run_dir)


def point_latest_at(run_dir: Path) -> None:
    """`latest` beside the run folders (`<db name>-runs/latest`) links to this run's folder: replaced in one
    step (a symlink renamed over the old one), so a reader never finds it missing or half-written."""
    link_atomically(run_dir.parent / LATEST, run_dir.name, folder=True)
