"""The nightly refresh without Prefect (`run_nightly`; caseforge.flows.nightly runs it as a flow): every
source, then the builders whose inputs changed, then the releases.

What runs comes from caseforge.flows.registry: SOURCES (each a flow, run in parallel, each on its own DuckDB
connection), BUILDERS marked `nightly`, and RELEASES. A builder or release runs only when the fingerprint of
its input tables differs from the one recorded at its last success (ops.input_fingerprints), so a night with no
upstream change makes no LLM call and leaves the releases as they were. One failing stage does not stop the
others; the run ends Failed and lists them. How each stage runs is handed in (`map_sources`, `run_stage`):
threads and plain calls by default, Prefect task runs in the flow, doubles in tests.
"""
from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from caseforge.disk_full import DiskFull, disk_full_line
from caseforge.fingerprints import inputs_fingerprint, last_fingerprint, record_fingerprint, value_fingerprint
from caseforge.flows import registry
from caseforge.flows.stage_outcome import StageOutcome
from caseforge.outputs import check_output_path
from caseforge.release import NothingToRelease
from caseforge.release.stored import child_url, current_release, is_store_url, local_folder, prepare_store_release
from caseforge.run_record import end_run, start_run, stop_open_runs
from caseforge.session import end_and_mirror, publish_after_each_run, publish_at_end
from caseforge.settings import Settings, load_settings
from caseforge.stage_report import StageReport
from caseforge.stopping import RunStopped, stop_of
from caseforge.store import StoreError
from caseforge.warehouse.connection import connect, open_warehouse
from caseforge.warehouse.mirror import export_curated_parquet
from caseforge.warehouse.statements import run_sql, table_exists

log = logging.getLogger(__name__)


@dataclass
class NightlyResult:
    run_id: int
    outcomes: list[StageOutcome]
    run_dir: Path
    plots: dict[str, tuple[str, Path]] = field(default_factory=dict)
    links: dict[str, tuple[str, str]] = field(default_factory=dict)     # key → (URI, description)

    @property
    def ok(self) -> bool:
        return not any(o.failed for o in self.outcomes)

    def rebuilt(self) -> list[str]:
        """The builders, evaluations and releases that ran tonight (were not skipped)."""
        return [f"{o.stage} {o.name}" for o in self.outcomes
                if o.stage not in ("source", "source health", "publish") and o.status != "skipped"]

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


def _as_report(result, name: str) -> StageReport:
    if isinstance(result, StageReport):
        return result
    if isinstance(result, dict):
        return StageReport(name=result.get("name", name), counts=dict(result.get("counts", {})),
                           failures=list(result.get("failures", [])), run_id=result.get("run_id"),
                           results=dict(result.get("results", {})), ended=result.get("ended"))
    raise TypeError(f"{name}: a stage must return a StageReport or its dict, got {type(result).__name__}")


def _outcome(stage: str, name: str, result, started: float) -> StageOutcome:
    report = _as_report(result, name)
    return StageOutcome(stage, name, report.status, dict(report.counts), time.monotonic() - started,
                        list(report.failures), str(report.results.get("summary") or ""))


def source_kwargs(source: registry.Source, from_samples: bool, samples_dir: Path) -> dict | None:
    """The flow arguments of a source: none live; its sample paths with --from-samples (None: no samples)."""
    if not from_samples:
        return {}
    if source.samples is None:
        return None
    paths = {arg: samples_dir / rel for arg, rel in source.samples.items()}
    if not all(path.exists() for path in paths.values()):
        return None
    return {arg: str(path) for arg, path in paths.items()}


def run_source(settings: Settings, source: registry.Source, kwargs: dict) -> StageOutcome:
    """One source on its own connection; any exception becomes a failed outcome, never a crash."""
    started = time.monotonic()
    try:
        with open_warehouse(settings.db_path) as con:
            before = run_sql(con, "ops/count_payloads.sql", [source.archive_source]).fetchone()[0]
        outcome = _outcome("source", source.name, source.run(settings, **kwargs), started)
        with open_warehouse(settings.db_path) as con:
            after = run_sql(con, "ops/count_payloads.sql", [source.archive_source]).fetchone()[0]
        outcome.counts["new_payloads"] = after - before
        return outcome
    except Exception as exc:  # one source failing must not stop the others
        if (request := stop_of(exc)) is not None:        # the process was told to stop: not this source's fault
            raise RunStopped(request) from exc
        if (line := disk_full_line(exc, f"source {source.name}", settings.db_path)) is not None:
            raise DiskFull(line) from exc                # the night stops: every later write would fail alike
        log.exception("source %s failed", source.name)
        return StageOutcome("source", source.name, "failed", {}, time.monotonic() - started,
                            [f"{type(exc).__name__}: {exc}"])


def threaded_sources(settings: Settings, planned: list[tuple[registry.Source, dict]]) -> list[StageOutcome]:
    """Each (source, kwargs) in its own thread, with a copy of the caller's context."""
    if not planned:
        return []
    with ThreadPoolExecutor(max_workers=len(planned), thread_name_prefix="nightly-source") as pool:
        futures = [pool.submit(contextvars.copy_context().run, run_source, settings, source, kwargs)
                   for source, kwargs in planned]
        return sources_ended([f.exception() or f.result() for f in futures])


def sources_ended(ended: list) -> list[StageOutcome]:
    """The sources' outcomes once all have ended; a full disk met by one stops the night then, carrying what the
    others did (their outcomes are recorded as they ended, not as failed); any other exception is raised."""
    raised = [e for e in ended if isinstance(e, BaseException)]
    if not raised:
        return ended
    others = [e for e in raised if not isinstance(e, DiskFull)]
    if others:
        raise others[0]
    raise DiskFull(raised[0].line, [e for e in ended if isinstance(e, StageOutcome)]) from raised[0]


def depends_on(entry: registry.FlowEntry, options: dict) -> dict:
    """What besides its input tables decides a builder's or an evaluation's output: the backend, model and
    options each of its LLM steps resolves to, the content of its prompt templates, and its options."""
    from caseforge.settings import PROMPTS_DIR
    from caseforge.llm.config import llm_choice

    choices = {}
    for step, role in sorted(entry.llm_steps().items()):
        try:
            choices[step] = llm_choice(step, role, options.get("llm"), options.get("model")).identity()
        except ValueError as exc:          # no model for a role: that, too, is part of the configuration
            choices[step] = {"unresolved": str(exc)}
    prompts = {path.relative_to(PROMPTS_DIR).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
               for pattern in entry.prompts for path in sorted(PROMPTS_DIR.glob(pattern))}
    return {"llm": choices, "prompts": prompts, "options": options}


def _gated(con, stage: str, name: str, inputs: tuple[str, ...], run: Callable[[], object], run_id: int,
           force: bool = False, depends: dict | None = None) -> StageOutcome:
    """Run a builder, an evaluation or an export only when its inputs — tables, and `depends` (settings,
    prompts) — changed since its last success."""
    started = time.monotonic()
    missing = [t for t in inputs if not table_exists(con, t)]
    if missing:
        return StageOutcome(stage, name, "skipped", {}, 0.0, [], f"input missing: {', '.join(missing)}")
    fingerprint, per_table = inputs_fingerprint(con, inputs)
    if depends:
        fingerprint = value_fingerprint({"tables": fingerprint, "depends": depends})
    empty = [t for t, fp in per_table.items() if fp["rows"] == 0]
    if empty:
        return StageOutcome(stage, name, "skipped", {}, time.monotonic() - started, [], f"input empty: {', '.join(empty)}")
    if not force and last_fingerprint(con, stage, name) == fingerprint:
        return StageOutcome(stage, name, "skipped", {}, time.monotonic() - started, [], "inputs unchanged")
    llm_before = run_sql(con, "ops/count_llm_calls.sql").fetchone()[0]
    try:
        result = run()
    except NothingToRelease as exc:          # a weak model kept nothing: said, not a crash
        return StageOutcome(stage, name, "skipped", {}, time.monotonic() - started, [], f"nothing to release: {exc}")
    except Exception as exc:
        if (request := stop_of(exc)) is not None:
            raise RunStopped(request) from exc
        if (line := disk_full_line(exc, f"{stage} {name}")) is not None:
            raise DiskFull(line) from exc                # the night stops: every later write would fail alike
        log.exception("%s %s failed", stage, name)
        return StageOutcome(stage, name, "failed", {}, time.monotonic() - started, [f"{type(exc).__name__}: {exc}"])
    if stage in ("builder", "evaluation"):
        outcome = _outcome(stage, name, result, started)
    else:
        outcome = StageOutcome(stage, name, "succeeded", {"rows": sum(v["rows"] for v in per_table.values())},
                               time.monotonic() - started, [], str(getattr(result, "path", "")))
    outcome.counts["llm_calls"] = run_sql(con, "ops/count_llm_calls.sql").fetchone()[0] - llm_before
    if not outcome.failed:
        record_fingerprint(con, stage, name, fingerprint, {"tables": per_table, "depends": depends or {}}, run_id)
    return outcome


def _stage_row(outcome: StageOutcome) -> list:
    """record_stage.sql's parameters after the run id."""
    message = "; ".join(outcome.failures[:20]) or outcome.note or None
    return [outcome.stage, outcome.name, outcome.status, json.dumps(outcome.counts, sort_keys=True),
            outcome.duration_s, message, datetime.now(timezone.utc)]


@dataclass
class NightlyOptions:
    from_samples: bool = False
    samples_dir: Path | None = None
    release_dir: Path | str | None = None       # a folder, or a store URL (s3://bucket/prefix)
    sources: list[str] | None = None           # None: all registered
    force: bool = False                        # run builders, evaluations and exports even when nothing changed
    reparse: bool = False                      # every source parses all its payloads again (a parser fix)


def run_in_place(stage: str, name: str, run: Callable[[], StageOutcome]) -> StageOutcome:
    """How run_nightly runs a builder, an evaluation or an export without Prefect: just so."""
    return run()


def run_nightly(settings: Settings, options: NightlyOptions | None = None,
                map_sources: Callable[[Settings, list], list[StageOutcome]] = threaded_sources,
                sources: dict[str, registry.Source] | None = None, builders: dict[str, registry.Builder] | None = None,
                evaluations: dict[str, registry.Evaluation] | None = None,
                releases: dict[str, registry.Release] | None = None, plots: dict | None = None,
                run_stage: Callable[[str, str, Callable[[], StageOutcome]], StageOutcome] = run_in_place,
                ) -> NightlyResult:
    """Sources in parallel, then builders, then evaluations, then exports; a summary in ops.nightly_stages
    and run_dir. Builders and evaluations are those the registry marks `nightly`, with the options of
    [nightly.builders.<name>] / [nightly.evaluations.<name>] in the settings (the per-night caps).
    `run_stage(stage, name, run)` runs each builder, evaluation and export (the flow makes each a task run).

    `sources`, `builders`, `evaluations`, `releases` and `plots` default to the registry's (tests pass
    doubles)."""
    from caseforge.flows.nightly_health import held_tables
    from caseforge.flows.nightly_report import PLOTS, write_run_dir

    options = options or NightlyOptions()
    sources = registry.SOURCES if sources is None else sources
    builders = {n: b for n, b in registry.BUILDERS.items() if b.nightly} if builders is None else builders
    evaluations = ({n: e for n, e in registry.EVALUATIONS.items() if e.nightly} if evaluations is None
                   else evaluations)
    releases = registry.RELEASES if releases is None else releases
    samples_dir = Path(options.samples_dir or settings.samples_dir)
    if options.from_samples and not samples_dir.is_dir():
        raise FileNotFoundError(f"samples folder {samples_dir} does not exist (set CASEFORGE_SAMPLES or --samples)")
    release_dir = options.release_dir or settings.release_dir
    if is_store_url(release_dir):  # each reachable, writable, and empty or this dataset's: now, not after a night
        for name in releases:
            prepare_store_release(child_url(release_dir, name), name)
    else:
        release_dir = check_output_path(local_folder(release_dir), settings, "the nightly's releases")
        for name in releases:          # each replaced as a whole: refused now, not after a night of work
            check_output_path(release_dir / name, settings, f"the {name} release", replaced=True)
    names = options.sources if options.sources is not None else sorted(sources)
    unknown = sorted(set(names) - set(sources))
    if unknown:
        raise ValueError(f"unknown source(s) {', '.join(unknown)}; known: {', '.join(sorted(sources))}")

    with open_warehouse(settings.db_path) as con:
        run_id = start_run(con, "nightly", "all")
    plan = [("source", name) for name in names] + [(stage, name) for stage, group in (
        ("builder", builders), ("evaluation", evaluations), ("export", releases)) for name in sorted(group)]
    outcomes: list[StageOutcome] = []
    running: list[tuple[str, str]] = []
    con = None
    deferred = publish_at_end()        # the sources' runs write the local mirror; it is published once, below
    try:
        planned = []
        for name in names:
            kwargs = source_kwargs(sources[name], options.from_samples, samples_dir)
            if not options.from_samples and not sources[name].live:
                outcomes.append(StageOutcome("source", name, "skipped", note=(
                    f"no live fetcher: load its files with `caseforge ingest {name} --from-dir DIR` "
                    "(or run the nightly with --from-samples)")))
            elif kwargs is None:
                outcomes.append(StageOutcome("source", name, "skipped",
                                             note="no samples for it (registry samples, or its folder is absent)"))
            else:
                planned.append((sources[name], {**kwargs, "reparse": True} if options.reparse else kwargs))
        running = [("source", source.name) for source, _ in planned]
        outcomes += map_sources(settings, planned)

        con = connect(settings.db_path)
        outcomes += _source_health(con, run_id, sources, outcomes)
        for stage, group, section in (("builder", builders, "builders"), ("evaluation", evaluations, "evaluations")):
            for name, entry in sorted(group.items()):
                opts = dict(getattr(load_settings().file.nightly, section).get(name) or {})
                running = [(stage, name)]
                outcomes.append(run_stage(stage, name, lambda stage=stage, name=name, entry=entry, opts=opts: _gated(
                    con, stage, name, entry.inputs, lambda: entry.run(settings, **opts), run_id,
                    options.force, depends_on(entry, opts))))
        failed_tables = _tables_of_failed(outcomes, {"source": sources, "builder": builders, "evaluation": evaluations})
        unhealthy = held_tables(outcomes, [*sources.values(), *(builders[n] for n in sorted(builders))])
        for name, release in sorted(releases.items()):
            folder = child_url(release_dir, name)
            partial = sorted(set(release.inputs) & set(failed_tables))
            held = sorted(set(release.inputs) & set(unhealthy))
            if partial or held:
                outcomes.append(StageOutcome("export", name, "skipped", note="not released: " + "; ".join(
                    [f"{t} comes from {failed_tables[t]}, which failed tonight" for t in partial]
                    + [f"{t} comes from {unhealthy[t]}" for t in held if t not in partial])))
                continue
            force = options.force or _no_release_yet(folder)
            running = [("export", name)]
            outcomes.append(run_stage("export", name, lambda name=name, release=release, folder=folder, force=force: _gated(
                con, "export", name, release.inputs, lambda: release.write(con, folder), run_id, force)))
        running = []
        result = NightlyResult(run_id, outcomes, settings.runs_dir / f"nightly-{run_id}")
        result.links = _links(settings, result, release_dir, releases)
        write_run_dir(con, result, PLOTS if plots is None else plots)
        report = StageReport("nightly", counts=_totals(outcomes), failures=result.failures(), run_id=run_id)
    except BaseException as exc:
        outcomes += getattr(exc, "outcomes", [])          # sources that ended beside a full disk
        _end_unfinished(settings, con, run_id, outcomes, plan, running, exc)
        raise
    finally:
        publish_after_each_run(deferred)
    published = end_and_mirror(con, settings, run_id, report, [_stage_row(o) for o in outcomes])
    if published is not None:       # a run of its own (ops.runs); failed, it fails the nightly's exit too
        result.outcomes.append(StageOutcome("publish", "mirror", published.status, dict(published.counts),
                                            failures=list(published.failures)))
    return result


def _end_unfinished(settings: Settings, con, run_id: int, outcomes: list[StageOutcome], plan: list[tuple[str, str]],
                    running: list[tuple[str, str]], exc: BaseException) -> None:
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
    finished = {(o.stage, o.name) for o in outcomes}
    unfinished = [StageOutcome(stage, name, status, note=f"{why} while it ran" if (stage, name) in running
                               else f"not started: {why}") for stage, name in plan if (stage, name) not in finished]
    report = StageReport("nightly", counts=_totals(outcomes + unfinished), run_id=run_id)
    if request is not None:
        report.stopped(request)
    else:
        report.crashed(why)
    try:
        con = con if con is not None else connect(settings.db_path)
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


def _source_health(con, run_id: int, sources: dict[str, registry.Source],
                   outcomes: list[StageOutcome]) -> list[StageOutcome]:
    """The `source health` stage (caseforge.flows.nightly_health); should it break, one failed outcome says why
    and the night goes on."""
    from caseforge.flows.nightly_health import STAGE, source_health

    started = time.monotonic()
    try:
        return source_health(con, run_id, sources, outcomes, load_settings().file.source_health)
    except Exception as exc:
        if (request := stop_of(exc)) is not None:
            raise RunStopped(request) from exc
        log.exception("source health failed")
        return [StageOutcome(STAGE, "all", "failed", {}, time.monotonic() - started, [f"{type(exc).__name__}: {exc}"])]


def _no_release_yet(folder: Path | str) -> bool:
    """Whether the release at `folder` is still to be written (a store that cannot say: written again, and its
    stage then says what is wrong with the store)."""
    try:
        return current_release(folder) is None
    except StoreError:
        return True


def _links(settings: Settings, result: NightlyResult, release_dir: Path | str,
           releases: dict) -> dict[str, tuple[str, str]]:
    """What a person opens after a run: each release folder there is (on a store, the folder its pointer names),
    the quality results' Parquet mirror (written at the end of the run), and the run's own folder (summary.md,
    plots)."""
    links = {}
    for name in sorted(releases):
        try:
            where = current_release(child_url(release_dir, name))
        except StoreError as exc:        # a store gone since the export: no link, never a failed nightly
            log.warning("nightly %s: no link to the %s release: %s", result.run_id, name, exc)
            continue
        if where is not None:
            links[f"release-{name}"] = (where if isinstance(where, str) else where.resolve().as_uri(),
                                        f"release folder: {name}")
    quality = settings.parquet_dir / "ops" / "quality_results.parquet"
    links["quality-results"] = (quality.resolve().as_uri(), "quality results (ops.quality_results, Parquet mirror)")
    links["run-folder"] = (result.run_dir.resolve().as_uri(), f"nightly run {result.run_id}: summary.md and plots")
    return links


def _tables_of_failed(outcomes: list[StageOutcome], entries: dict[str, dict]) -> dict[str, str]:
    """Table → the stage that writes it, for every stage that failed tonight (its tables may be partial)."""
    tables = {}
    for o in outcomes:
        entry = entries.get(o.stage, {}).get(o.name)
        if o.failed and entry is not None:
            tables.update({table: f"{o.stage} {o.name}" for table in getattr(entry, "outputs", ())})
    return tables


def _totals(outcomes: list[StageOutcome]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for o in outcomes:
        totals[f"stages_{o.status}"] = totals.get(f"stages_{o.status}", 0) + 1
        for key in ("fetched", "new_payloads", "new", "changed", "quarantined", "llm_calls", "cache_hits"):
            totals[key] = totals.get(key, 0) + o.counts.get(key, 0)
    return totals
