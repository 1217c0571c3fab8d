"""The nightly refresh: every source, then the builders whose inputs changed, then the releases.

Registries (the only place a new source, builder or release is wired in):

- SOURCES: name -> SourceSpec(refresh, archive_source). `refresh(settings, **kwargs)` runs the
  source and returns a StageReport (or its dict). Sources run in parallel threads of this process,
  each on its own DuckDB connection to the same database (DuckDB allows that within one process).
- SAMPLE_INPUTS: name -> kwargs for `refresh` under --from-samples, as paths relative to the
  samples folder (CASEFORGE_SAMPLES). A source without an entry is skipped in that mode.
- BUILDERS: name -> BuilderSpec(inputs, run). `run(settings, **options)` returns a StageReport;
  it runs only when the fingerprint of its input tables differs from the one recorded at its last
  success (ops.input_fingerprints), so a night with no upstream change makes no LLM call.
- EXPORTS: dataset -> ExportSpec(inputs, write). `write(con, out_dir)` writes a release with
  caseforge.release.write_release; it is fingerprint-gated the same way.
- PLOTS: name -> function(con) -> (title, png bytes) or None; published with the run's summary.
"""
from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import duckdb

from caseforge.config import Settings
from caseforge.runs import StageReport, finish_run, start_run
from caseforge.warehouse import connect, export_curated_parquet, run_sql, sql_text

log = logging.getLogger(__name__)


# --- registries -------------------------------------------------------------------------------

@dataclass(frozen=True)
class SourceSpec:
    refresh: Callable[..., StageReport | dict]
    archive_source: str


@dataclass(frozen=True)
class BuilderSpec:
    inputs: tuple[str, ...]                       # schema.table names
    run: Callable[..., StageReport | dict]


@dataclass(frozen=True)
class ExportSpec:
    inputs: tuple[str, ...]
    write: Callable[[duckdb.DuckDBPyConnection, Path], object]


def _oyez_refresh(settings: Settings, **kwargs) -> StageReport:
    from caseforge.tasks.oyez import ingest

    return ingest.refresh(settings, **kwargs)


def _flow_refresh(module: str, flow_name: str) -> Callable[..., dict]:
    """A source whose refresh is a Prefect flow: run it as a subflow and hand back its report."""
    def refresh(settings: Settings, **kwargs) -> dict:
        import importlib

        flow = getattr(importlib.import_module(module), flow_name)
        state = flow(db=str(settings.db_path), **kwargs, return_state=True)
        result = state.result(raise_on_failure=False)
        if isinstance(result, BaseException) or not isinstance(result, dict):
            raise RuntimeError(f"{flow_name} crashed: {result}")
        return result
    return refresh


def _export_scotus(con: duckdb.DuckDBPyConnection, out_dir: Path):
    from caseforge.release_oyez import export_scotus

    return export_scotus(con, out_dir)


def _plot_scotus_decades(con: duckdb.DuckDBPyConnection):
    from caseforge.plots import bar_chart

    if not table_exists(con, "curated.scotus_cases"):
        return None
    rows = run_sql(con, "ops/decade_counts.sql").fetchall()
    if not rows:
        return None
    return "U.S. Supreme Court cases per decade of decision", bar_chart(dict(rows), "cases per decade", "decade")


SOURCES: dict[str, SourceSpec] = {
    "oyez": SourceSpec(refresh=_oyez_refresh, archive_source="oyez"),
    "hudoc": SourceSpec(refresh=_flow_refresh("caseforge.flows.hudoc", "hudoc_refresh"), archive_source="hudoc"),
    "guides": SourceSpec(refresh=_flow_refresh("caseforge.flows.guides", "guides_refresh"), archive_source="guides"),
    "cn": SourceSpec(refresh=_flow_refresh("caseforge.flows.cn", "cn_refresh"), archive_source="cn"),
    "barexam": SourceSpec(refresh=_flow_refresh("caseforge.flows.case_rag", "barexam_import"),
                          archive_source="barexam"),
}

SAMPLE_INPUTS: dict[str, dict[str, str]] = {
    "oyez": {"from_dir": "oyez/cases", "legacy_table": "oyez/legacy_justice_table.csv"},
    "hudoc": {"from_dir": "hudoc"},
    "guides": {"from_dir": "echr_guides"},
    "cn": {"from_dir": "cn"},
    "barexam": {"from_dir": "barexam"},
}

def _build_casegen_items(settings: Settings, **options) -> StageReport:
    from caseforge.tasks.casegen.pipeline import run_build

    return run_build(settings, limit=options.get("limit"))


# LLM builders (casefacts, aquaechr) need a configured backend and model; they are run with
# `caseforge build ...` until the nightly carries LLM settings. CaseGen items need no model.
BUILDERS: dict[str, BuilderSpec] = {
    "casegen_items": BuilderSpec(inputs=("curated.cn_judgments",), run=_build_casegen_items),
}

EXPORTS: dict[str, ExportSpec] = {
    "scotus": ExportSpec(inputs=("curated.scotus_cases",), write=_export_scotus),
}

PLOTS: dict[str, Callable[[duckdb.DuckDBPyConnection], tuple[str, bytes] | None]] = {
    "scotus_decades": _plot_scotus_decades,
}


# --- change detection -------------------------------------------------------------------------

_TABLE_NAME = re.compile(r"^([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)$")


def _split(table: str) -> tuple[str, str]:
    match = _TABLE_NAME.match(table)
    if not match:
        raise ValueError(f"input table must look like schema.table: {table!r}")
    return match.group(1), match.group(2)


def table_exists(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    return run_sql(con, "ops/table_exists.sql", list(_split(table))).fetchone()[0] > 0


def table_fingerprint(con: duckdb.DuckDBPyConnection, table: str) -> dict:
    """Row count and an order-independent hash of every row's content."""
    schema, name = _split(table)
    rows, content_hash = con.execute(sql_text("ops/table_fingerprint.sql").format(table=f"{schema}.{name}")).fetchone()
    return {"rows": int(rows), "hash": content_hash}


def inputs_fingerprint(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...]) -> tuple[str, dict]:
    per_table = {t: table_fingerprint(con, t) for t in sorted(tables)}
    digest = hashlib.sha256(json.dumps(per_table, sort_keys=True).encode()).hexdigest()
    return digest, per_table


def last_fingerprint(con: duckdb.DuckDBPyConnection, stage: str, name: str) -> str | None:
    row = run_sql(con, "ops/last_fingerprint.sql", [stage, name]).fetchone()
    return row[0] if row else None


def record_fingerprint(con, stage: str, name: str, fingerprint: str, per_table: dict, run_id: int) -> None:
    run_sql(con, "ops/record_fingerprint.sql",
            [stage, name, fingerprint, json.dumps(per_table), run_id, datetime.now(timezone.utc)])


# --- one nightly ------------------------------------------------------------------------------

@dataclass
class StageOutcome:
    stage: str                  # source | builder | export
    name: str
    status: str                 # succeeded | failed | quarantined | skipped
    counts: dict[str, int] = field(default_factory=dict)
    duration_s: float = 0.0
    failures: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def failed(self) -> bool:
        return self.status in ("failed", "quarantined")

    def summary_row(self) -> dict:
        c = self.counts
        return {
            "stage": self.stage, "name": self.name, "status": self.status,
            "fetched": c.get("fetched", 0), "new_payloads": c.get("new_payloads", 0),
            "new": c.get("new", 0), "changed": c.get("changed", 0), "quarantined": c.get("quarantined", 0),
            "llm_calls": c.get("llm_calls", 0), "cache_hits": c.get("cache_hits", 0),
            "duration_s": round(self.duration_s, 2), "note": self.note or "; ".join(self.failures[:3]),
        }


@dataclass
class NightlyResult:
    run_id: int
    outcomes: list[StageOutcome]
    run_dir: Path
    plots: dict[str, tuple[str, Path]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(o.failed for o in self.outcomes)

    def failures(self) -> list[str]:
        lines = []
        for o in self.outcomes:
            if o.failed:
                reasons = o.failures or [o.status]
                lines += [f"{o.stage} {o.name}: {r}" for r in reasons]
        return lines

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "ok": self.ok, "run_dir": str(self.run_dir),
                "stages": [o.summary_row() for o in self.outcomes], "failures": self.failures()}


def _as_report(result, name: str) -> StageReport:
    if isinstance(result, StageReport):
        return result
    if isinstance(result, dict):
        return StageReport(name=result.get("name", name), counts=dict(result.get("counts", {})),
                           failures=list(result.get("failures", [])), run_id=result.get("run_id"))
    raise TypeError(f"{name}: a stage must return a StageReport or its dict, got {type(result).__name__}")


def _outcome(stage: str, name: str, result, started: float) -> StageOutcome:
    report = _as_report(result, name)
    return StageOutcome(stage, name, report.status, dict(report.counts), time.monotonic() - started,
                        list(report.failures))


def source_kwargs(name: str, from_samples: bool, samples_dir: Path) -> dict | None:
    """The refresh arguments of a source: none live; its sample paths with --from-samples (None: no samples)."""
    if not from_samples:
        return {}
    mapping = SAMPLE_INPUTS.get(name)
    if mapping is None:
        return None
    paths = {arg: samples_dir / rel for arg, rel in mapping.items()}
    if not all(path.exists() for path in paths.values()):
        return None
    return {arg: str(path) for arg, path in paths.items()}


def run_source(settings: Settings, name: str, kwargs: dict) -> StageOutcome:
    """One source on its own connection; any exception becomes a failed outcome, never a crash."""
    spec = SOURCES[name]
    started = time.monotonic()
    try:
        with _open(settings) as con:
            before = run_sql(con, "ops/count_payloads.sql", [spec.archive_source]).fetchone()[0]
        outcome = _outcome("source", name, spec.refresh(settings, **kwargs), started)
        with _open(settings) as con:
            after = run_sql(con, "ops/count_payloads.sql", [spec.archive_source]).fetchone()[0]
        outcome.counts["new_payloads"] = after - before
        return outcome
    except Exception as exc:  # one source failing must not stop the others
        log.exception("source %s failed", name)
        return StageOutcome("source", name, "failed", {}, time.monotonic() - started,
                            [f"{type(exc).__name__}: {exc}"])


class _open:
    def __init__(self, settings: Settings):
        self.settings = settings

    def __enter__(self) -> duckdb.DuckDBPyConnection:
        self.con = connect(self.settings.db_path)
        return self.con

    def __exit__(self, *exc) -> None:
        self.con.close()


def threaded_sources(settings: Settings, planned: list[tuple[str, dict]]) -> list[StageOutcome]:
    """Each (source, kwargs) in its own thread, with a copy of the caller's context."""
    if not planned:
        return []
    with ThreadPoolExecutor(max_workers=len(planned), thread_name_prefix="nightly-source") as pool:
        futures = [pool.submit(contextvars.copy_context().run, run_source, settings, name, kwargs)
                   for name, kwargs in planned]
        return [f.result() for f in futures]


def _gated(con, stage: str, name: str, inputs: tuple[str, ...], run: Callable[[], object], run_id: int,
           force: bool = False) -> StageOutcome:
    """Run a builder or an export only when its inputs changed since its last success."""
    started = time.monotonic()
    missing = [t for t in inputs if not table_exists(con, t)]
    if missing:
        return StageOutcome(stage, name, "skipped", {}, 0.0, [], f"input missing: {', '.join(missing)}")
    fingerprint, per_table = inputs_fingerprint(con, inputs)
    empty = [t for t, fp in per_table.items() if fp["rows"] == 0]
    if empty:
        return StageOutcome(stage, name, "skipped", {}, time.monotonic() - started, [], f"input empty: {', '.join(empty)}")
    if not force and last_fingerprint(con, stage, name) == fingerprint:
        return StageOutcome(stage, name, "skipped", {}, time.monotonic() - started, [], "inputs unchanged")
    llm_before = run_sql(con, "ops/count_llm_calls.sql").fetchone()[0]
    try:
        result = run()
    except Exception as exc:
        log.exception("%s %s failed", stage, name)
        return StageOutcome(stage, name, "failed", {}, time.monotonic() - started, [f"{type(exc).__name__}: {exc}"])
    if stage == "builder":
        outcome = _outcome(stage, name, result, started)
    else:
        outcome = StageOutcome(stage, name, "succeeded", {"rows": sum(v["rows"] for v in per_table.values())},
                               time.monotonic() - started, [], str(getattr(result, "path", "")))
    outcome.counts["llm_calls"] = run_sql(con, "ops/count_llm_calls.sql").fetchone()[0] - llm_before
    if not outcome.failed:
        record_fingerprint(con, stage, name, fingerprint, per_table, run_id)
    return outcome


def _record(con, run_id: int, outcome: StageOutcome) -> None:
    message = "; ".join(outcome.failures[:20]) or outcome.note or None
    run_sql(con, "ops/record_stage.sql", [run_id, outcome.stage, outcome.name, outcome.status,
                                          json.dumps(outcome.counts, sort_keys=True), outcome.duration_s,
                                          message, datetime.now(timezone.utc)])


@dataclass
class NightlyOptions:
    from_samples: bool = False
    samples_dir: Path | None = None
    release_dir: Path | None = None
    sources: list[str] | None = None           # None: all registered
    builder_options: dict[str, dict] = field(default_factory=dict)
    force: bool = False                        # run builders and exports even when inputs are unchanged


def run_nightly(settings: Settings, options: NightlyOptions | None = None,
                map_sources: Callable[[Settings, list[tuple[str, dict]]], list[StageOutcome]] = threaded_sources,
                ) -> NightlyResult:
    """Sources in parallel, then builders, then exports; a summary in ops.nightly_stages and run_dir."""
    options = options or NightlyOptions()
    samples_dir = Path(options.samples_dir or settings.samples_dir)
    release_dir = Path(options.release_dir or settings.db_path.parent / "releases")
    names = options.sources if options.sources is not None else sorted(SOURCES)
    unknown = sorted(set(names) - set(SOURCES))
    if unknown:
        raise ValueError(f"unknown source(s) {', '.join(unknown)}; known: {', '.join(sorted(SOURCES))}")

    with _open(settings) as con:
        run_id = start_run(con, "nightly", "all")
    outcomes: list[StageOutcome] = []
    planned = []
    for name in names:
        kwargs = source_kwargs(name, options.from_samples, samples_dir)
        if kwargs is None:
            outcomes.append(StageOutcome("source", name, "skipped", note="no samples for it (SAMPLE_INPUTS, or its folder is absent)"))
        else:
            planned.append((name, kwargs))
    outcomes += map_sources(settings, planned)

    con = connect(settings.db_path)
    try:
        for name, spec in sorted(BUILDERS.items()):
            opts = options.builder_options.get(name, {})
            outcomes.append(_gated(con, "builder", name, spec.inputs,
                                   lambda spec=spec, opts=opts: spec.run(settings, **opts), run_id, options.force))
        for name, spec in sorted(EXPORTS.items()):
            force = options.force or not (release_dir / name).is_dir()
            outcomes.append(_gated(con, "export", name, spec.inputs,
                                   lambda spec=spec: spec.write(con, release_dir), run_id, force))
        for outcome in outcomes:
            _record(con, run_id, outcome)
        run_dir = settings.db_path.parent / "runs" / f"nightly-{run_id}"
        result = NightlyResult(run_id, outcomes, run_dir)
        _write_run_dir(con, result)
        report = StageReport("nightly", counts=_totals(outcomes), failures=result.failures(), run_id=run_id)
        finish_run(con, run_id, report)
        export_curated_parquet(con, settings.parquet_dir)
    finally:
        con.close()
    return result


def _totals(outcomes: list[StageOutcome]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for o in outcomes:
        totals[f"stages_{o.status}"] = totals.get(f"stages_{o.status}", 0) + 1
        for key in ("fetched", "new_payloads", "new", "changed", "quarantined", "llm_calls", "cache_hits"):
            totals[key] = totals.get(key, 0) + o.counts.get(key, 0)
    return totals


def _write_run_dir(con, result: NightlyResult) -> None:
    from caseforge.nightly_report import quality_rows, summary_markdown

    result.run_dir.mkdir(parents=True, exist_ok=True)
    for name, plot in sorted(PLOTS.items()):
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
