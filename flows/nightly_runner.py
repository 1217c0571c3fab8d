"""The nightly refresh without Prefect (`run_nightly`; caseforge.flows.nightly runs it as a flow): the runner
that walks tonight's plan (caseforge.flows.nightly_plan), wave after wave.

One failing stage does not stop the others; the run ends Failed and lists them. A gated stage (a builder, an
evaluation, a release) runs only when the fingerprint of its input tables, and of what else decides it, differs
from the one recorded at its last success (ops.input_fingerprints), so a night with no upstream change makes no
LLM call and leaves the releases as they were. How the stages run is handed in (`map_parallel`, `run_stage`):
threads and plain calls by default, Prefect task runs in the flow, doubles in tests.
"""
from __future__ import annotations

import contextvars
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import duckdb

from caseforge.disk_full import DiskFull, disk_full_line
from caseforge.fingerprints import inputs_fingerprint, last_fingerprint, record_fingerprint, value_fingerprint
from caseforge.flows import registry
from caseforge.flows.nightly_plan import (NOT_REBUILT, NightlyOptions, Plan, Stage, as_report, build_plan,
                                          files_fingerprint, registry_stages, samples_folder, source_kwargs)
from caseforge.flows.nightly_report import PLOTS, write_run_dir
from caseforge.flows.stage_outcome import StageOutcome
from caseforge.outputs import check_output_path
from caseforge.release import NothingToRelease, ReleaseHeld
from caseforge.release.stored import child_url, current_release, is_store_url, local_folder, prepare_store_release
from caseforge.run_record import begin_work, end_run, end_work, start_run, stop_open_runs
from caseforge.session import LLM_COST_COUNTS, end_and_mirror, publish_after_each_run, publish_at_end
from caseforge.settings import Settings
from caseforge.stage_report import StageReport
from caseforge.stopping import RunStopped, stop_of
from caseforge.store import StoreError
from caseforge.warehouse.connection import connect, open_warehouse
from caseforge.warehouse.mirror import export_curated_parquet
from caseforge.warehouse.statements import run_sql, table_exists

__all__ = ["NightlyOptions", "NightlyResult", "StageOutcome", "run_nightly", "source_kwargs"]

log = logging.getLogger(__name__)


@dataclass
class NightlyResult:
    run_id: int
    outcomes: list[StageOutcome]
    run_dir: Path
    plots: dict[str, tuple[str, Path]] = field(default_factory=dict)
    locations: dict[str, tuple[str, str]] = field(default_factory=dict)   # key → (path or URL, description)

    @property
    def ok(self) -> bool:
        return not any(o.failed for o in self.outcomes)

    def rebuilt(self) -> list[str]:
        """The builders, evaluations and releases that ran tonight (were not skipped)."""
        return [f"{o.stage} {o.name}" for o in self.outcomes
                if o.stage not in NOT_REBUILT and o.status != "skipped"]

    def failures(self) -> list[str]:
        lines = []
        for o in self.outcomes:
            if o.failed:
                reasons = o.failures or [o.status]
                lines += [f"{o.stage} {o.name}: {r}" for r in reasons]
        return lines

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "ok": self.ok, "run_dir": str(self.run_dir),
                "stages": [o.summary_row() for o in self.outcomes], "failures": self.failures(),
                "rebuilt": self.rebuilt()}


def _outcome(stage: Stage, result, started: float, rows: int | None = None) -> StageOutcome:
    """What a stage's work returned, as its outcome: a report's status, counts and failures; what a release wrote
    succeeded, counting the rows it read (`rows`) and naming where it went; an outcome (a source's health) as
    it is."""
    if isinstance(result, StageOutcome):
        return result
    if stage.kind == "export" and not isinstance(result, (StageReport, dict)):
        return StageOutcome(stage.kind, stage.name, "succeeded", {"rows": rows or 0}, time.monotonic() - started, [],
                            str(getattr(result, "path", "") or ""))
    report = as_report(result, stage.name)
    return StageOutcome(stage.kind, stage.name, report.status, dict(report.counts), time.monotonic() - started,
                        list(report.failures), str(report.results.get("summary") or ""))


@dataclass
class Night:
    """What the stages of one nightly share while it runs: the run, its plan, the outcomes so far and one DuckDB
    connection for the stages that run in the nightly's own thread (the parallel ones open their own)."""
    settings: Settings
    run_id: int
    plan: Plan
    force: bool = False
    outcomes: list[StageOutcome] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    con: object = None

    def connection(self):
        if self.con is None:
            self.con = connect(self.settings.db_path)
        return self.con

    def failed(self) -> dict[str, str]:
        """The stages that failed so far → the first reason of each."""
        return {f"{o.stage} {o.name}": (o.failures or [o.note or o.status])[0] for o in self.outcomes if o.failed}


def run_stage_of(night: Night, stage: Stage) -> StageOutcome:
    """One stage of the plan, start to end; any exception becomes a failed outcome, never a crash (a stop, though,
    stops the nightly)."""
    started = time.monotonic()
    skip = stage.skip or night.plan.held_back(stage, night.failed())
    if skip:
        return StageOutcome(stage.kind, stage.name, "skipped", note=skip)
    try:
        with registry.subflow_named(f"nightly-{night.run_id} {stage.task_name}"):
            if stage.gated:
                return _gated(night, stage, started)
            return _outcome(stage, stage.work(night), started)
    except NothingToRelease as exc:          # a weak model kept nothing: said, not a crash
        return StageOutcome(stage.kind, stage.name, "skipped", {}, time.monotonic() - started, [],
                            f"nothing to release: {exc}")
    except ReleaseHeld as exc:               # [review.policy] below = "hold": said, not a crash
        return StageOutcome(stage.kind, stage.name, "skipped", {}, time.monotonic() - started, [], str(exc))
    except Exception as exc:
        if (request := stop_of(exc)) is not None:        # the process was told to stop: not this stage's fault
            raise RunStopped(request) from exc
        near = night.settings.db_path if stage.kind == "source" else None
        if (line := disk_full_line(exc, stage.key, near)) is not None:
            raise DiskFull(line) from exc                # the night stops: every later write would fail alike
        log.exception("%s failed", stage.key)
        error = exc.error if isinstance(getattr(exc, "error", None), Exception) else exc   # a flow's own, not FlowCrashed
        return StageOutcome(stage.kind, stage.name, "failed", {}, time.monotonic() - started,
                            [f"{type(error).__name__}: {error}"])


def _gated(night: Night, stage: Stage, started: float) -> StageOutcome:
    """Run a gated stage only when its inputs — tables, and `depends` (settings, prompts) — changed since its last
    success, or its output is absent, or the night is forced."""
    con = night.connection()
    missing = [t for t in stage.inputs if not table_exists(con, t)]
    if missing:
        return StageOutcome(stage.kind, stage.name, "skipped", {}, 0.0, [], f"input missing: {', '.join(missing)}")
    _checkpoint(con)
    fingerprint, per_table = inputs_fingerprint(con, stage.inputs)
    depends = stage.depends(con) if stage.depends else None
    if depends:
        fingerprint = value_fingerprint({"tables": fingerprint, "depends": depends})
    empty = [t for t, fp in per_table.items() if fp["rows"] == 0]
    if empty:
        return StageOutcome(stage.kind, stage.name, "skipped", {}, time.monotonic() - started, [],
                            f"input empty: {', '.join(empty)}")
    force = night.force or (stage.unwritten is not None and stage.unwritten())
    if not force and last_fingerprint(con, stage.kind, stage.name) == fingerprint:
        return StageOutcome(stage.kind, stage.name, "skipped", {}, time.monotonic() - started, [], "inputs unchanged")
    llm_before = run_sql(con, "ops/count_llm_calls.sql").fetchone()[0]
    outcome = _outcome(stage, stage.work(night), started, sum(v["rows"] for v in per_table.values()))
    outcome.counts["llm_calls"] = run_sql(con, "ops/count_llm_calls.sql").fetchone()[0] - llm_before
    if not outcome.failed:
        record_fingerprint(con, stage.kind, stage.name, fingerprint, {"tables": per_table, "depends": depends or {}},
                           night.run_id)
    return outcome


def _checkpoint(con) -> None:
    """The warehouse's tables as the file will hold them: a fingerprint carries DuckDB's storage facts, which the
    checkpoint at the file's close moves for a table written since the last one, so a fingerprint recorded before it
    would read as changed the next night. A checkpoint refused (another transaction open) leaves that: a stage run
    once more, never one skipped."""
    try:
        con.execute("CHECKPOINT")
    except duckdb.Error as exc:
        log.info("no checkpoint before a fingerprint: %s", exc)


def _record_replayed_files(night: Night, stage: Stage, outcome: StageOutcome, samples_dir: Path) -> None:
    """After a source replayed its files without failing: their fingerprint, which `--plan` compares."""
    if stage.files and not outcome.failed and outcome.status != "skipped":
        files = files_fingerprint(stage.files, samples_dir)
        record_fingerprint(night.connection(), stage.kind, stage.name, value_fingerprint(files), {"files": files},
                           night.run_id)


def _stage_row(outcome: StageOutcome) -> list:
    """record_stage.sql's parameters after the run id."""
    message = "; ".join(outcome.failures[:20]) or outcome.note or None
    return [outcome.stage, outcome.name, outcome.status, json.dumps(outcome.counts, sort_keys=True),
            outcome.duration_s, message, datetime.now(timezone.utc)]


def threads(stages: list[Stage], run: Callable[[Stage], StageOutcome]) -> list[StageOutcome]:
    """How run_nightly runs parallel stages without Prefect: each in its own thread, with a copy of the caller's
    context."""
    if not stages:
        return []
    with ThreadPoolExecutor(max_workers=len(stages), thread_name_prefix="nightly-source") as pool:
        futures = [pool.submit(contextvars.copy_context().run, run, stage) for stage in stages]
        return parallel_ended([f.exception() or f.result() for f in futures])


def parallel_ended(ended: list) -> list[StageOutcome]:
    """The parallel stages' outcomes once all have ended; a full disk met by one stops the night then, carrying
    what the others did (their outcomes are recorded as they ended, not as failed); any other exception is
    raised."""
    raised = [e for e in ended if isinstance(e, BaseException)]
    if not raised:
        return ended
    others = [e for e in raised if not isinstance(e, DiskFull)]
    if others:
        raise others[0]
    raise DiskFull(raised[0].line, [e for e in ended if isinstance(e, StageOutcome)]) from raised[0]


def in_place(stage: Stage, run: Callable[[], StageOutcome]) -> StageOutcome:
    """How run_nightly runs the other stages without Prefect: just so."""
    return run()


def preflight(settings: Settings, options: NightlyOptions, releases: dict) -> Path | str:
    """What must hold before a night of work (refused now, not after it): the samples folder, and every release's
    place (a folder each may replace as a whole, or a store reachable, writable, and empty or this dataset's).
    Returns where the releases go."""
    samples_folder(settings, options)
    release_dir = options.release_dir or settings.release_dir
    if is_store_url(release_dir):
        for name in releases:
            prepare_store_release(child_url(release_dir, name), name)
        return release_dir
    release_dir = check_output_path(local_folder(release_dir), settings, "the nightly's releases")
    for name in releases:
        check_output_path(release_dir / name, settings, f"the {name} release", replaced=True)
    return release_dir


def run_nightly(settings: Settings, options: NightlyOptions | None = None,
                map_parallel: Callable[[list[Stage], Callable], list[StageOutcome]] = threads,
                sources: dict[str, registry.Source] | None = None, builders: dict[str, registry.Builder] | None = None,
                evaluations: dict[str, registry.Evaluation] | None = None,
                releases: dict[str, registry.Release] | None = None, plots: dict | None = None,
                run_stage: Callable[[Stage, Callable[[], StageOutcome]], StageOutcome] = in_place,
                ) -> NightlyResult:
    """Walk tonight's plan (caseforge.flows.nightly_plan): the sources in parallel, then the builders, the
    evaluations, the reviews and the releases; a summary in ops.nightly_stages and the run's folder.
    `map_parallel(stages, run)` runs the parallel stages, `run_stage(stage, run)` each of the others (the flow
    makes each a task run).

    `sources`, `builders`, `evaluations`, `releases` and `plots` default to the registry's (tests pass
    doubles)."""
    options = options or NightlyOptions()
    entries = registry_stages(builders, evaluations, sources, releases)
    release_dir = preflight(settings, options, entries["releases"])
    plan = build_plan(settings, options, **entries, release_dir=release_dir)
    samples_dir = samples_folder(settings, options)

    with open_warehouse(settings.db_path) as con:
        run_id = start_run(con, "nightly", "all")
    night = Night(settings, run_id, plan, options.force)
    deferred = publish_at_end()        # the sources' runs write the local mirror; it is published once, below
    inside = begin_work(run_id)        # the stages' runs are the nightly's (ops.runs.parent_run_id)
    try:
        for wave in plan.waves():
            parallel = [stage for stage in wave if stage.parallel]
            night.running = [stage.key for stage in parallel]
            outcomes = map_parallel(parallel, lambda stage: run_stage_of(night, stage))
            night.outcomes += outcomes
            for stage, outcome in zip(parallel, outcomes):
                _record_replayed_files(night, stage, outcome, samples_dir)
            for stage in wave:
                if not stage.parallel:
                    night.running = [stage.key]
                    night.outcomes.append(run_stage(stage, lambda stage=stage: run_stage_of(night, stage)))
        night.running = []
        result = NightlyResult(run_id, night.outcomes, settings.runs_dir / f"nightly-{run_id}")
        result.locations = _locations(settings, result, release_dir, entries["releases"])
        write_run_dir(night.connection(), result, PLOTS if plots is None else plots)
        report = StageReport("nightly", counts=_totals(night.outcomes), failures=result.failures(), run_id=run_id)
    except BaseException as exc:
        night.outcomes += getattr(exc, "outcomes", [])          # parallel stages that ended beside a full disk
        _end_unfinished(settings, night, exc)
        raise
    finally:
        end_work(inside)
        publish_after_each_run(deferred)
    published = end_and_mirror(night.connection(), settings, run_id, report, [_stage_row(o) for o in night.outcomes])
    if published is not None:       # a run of its own (ops.runs); failed, it fails the nightly's exit too
        result.outcomes.append(StageOutcome("publish", "mirror", published.status, dict(published.counts),
                                            failures=list(published.failures)))
    return result


def _end_unfinished(settings: Settings, night: Night, exc: BaseException) -> None:
    """The nightly did not get to its end (stopped, or an exception outside any one stage): what finished is
    recorded as it finished, every stage that did not (running, or not started) as interrupted / cancelled, or
    failed with the reason, and the nightly itself likewise. Runs of stages still going in other threads are
    marked stopped too (they stop at their next step, or are abandoned when the command leaves)."""
    request = stop_of(exc)
    if request is not None:
        status, why = request.state, request.reason
    else:
        status, why = "failed", disk_full_line(exc, "nightly", settings.db_path) or \
            f"the nightly failed: {type(exc).__name__}: {exc}"
    outcomes, run_id = night.outcomes, night.run_id
    finished = {f"{o.stage} {o.name}" for o in outcomes}
    unfinished = [StageOutcome(stage.kind, stage.name, status, note=f"{why} while it ran" if stage.key in night.running
                               else f"not started: {why}") for stage in night.plan.stages if stage.key not in finished]
    report = StageReport("nightly", counts=_totals(outcomes + unfinished), run_id=run_id)
    if request is not None:
        report.stopped(request)
    else:
        report.crashed(why)
    try:
        con = night.connection()
    except Exception as error:                # noqa: BLE001  (the next start marks the run: its process will be gone)
        log.warning("nightly %s: its end could not be written: %s", run_id, error)
        return
    con = end_run(con, run_id, report, [_stage_row(o) for o in outcomes + unfinished])
    if request is not None:
        stop_open_runs(request)
    if con is None:
        return
    try:
        export_curated_parquet(con, settings.parquet_dir)
    except Exception as error:                # noqa: BLE001  (never hides why the nightly ended)
        log.warning("nightly %s: the Parquet mirror was not rewritten: %s", run_id, error)
    finally:
        con.close()


def _locations(settings: Settings, result: NightlyResult, release_dir: Path | str,
               releases: dict) -> dict[str, tuple[str, str]]:
    """Where a person finds what the run made, at the stable places docs/configuration.md names (a path as written, not
    resolved through the mirror's link into one of its generations): each release there is (on a store, the
    folder its pointer names), the quality results in the Parquet mirror, and the run's own folder."""
    found = {}
    for name in sorted(releases):
        try:
            where = current_release(child_url(release_dir, name))
        except StoreError as exc:        # a store gone since the export: not named, never a failed nightly
            log.warning("nightly %s: the %s release is not named: %s", result.run_id, name, exc)
            continue
        if where is not None:
            found[f"release-{name}"] = (where if isinstance(where, str) else str(Path(where).absolute()),
                                        f"the {name} release")
    found["quality-results"] = (str((settings.parquet_dir / "ops" / "quality_results.parquet").absolute()),
                                "quality results (ops.quality_results in the Parquet mirror)")
    found["run-folder"] = (str(result.run_dir.absolute()), f"nightly run {result.run_id}: summary.md and plots "
                                                           f"(the newest run's: {settings.runs_dir.absolute()}/latest)")
    return found


def _totals(outcomes: list[StageOutcome]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for o in outcomes:
        totals[f"stages_{o.status}"] = totals.get(f"stages_{o.status}", 0) + 1
        for key in ("fetched", "new_payloads", "new", "changed", "quarantined", "llm_calls", "cache_hits"):
            totals[key] = totals.get(key, 0) + o.counts.get(key, 0)
        for key in LLM_COST_COUNTS:         # what the night's LLM calls cost: only when it made any
            if key in o.counts:
                totals[key] = totals.get(key, 0) + o.counts[key]
    return totals
