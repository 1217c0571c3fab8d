"""Prefect flow: the nightly refresh (deployment `nightly` in deployments/prefect.yaml). caseforge.flows.nightly_runner
does the work; here each source is a task run of this flow, each builder, evaluation and release a task run of
its own, and the run ends Completed, or Failed with the stages that failed."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed

from caseforge.disk_full import DiskFull
from caseforge.flows import registry
from caseforge.flows.nightly_runner import NightlyOptions, StageOutcome, run_nightly, run_source, sources_ended
from caseforge.flows.states import FlowCrashed, RunFailed, ends_as_stopped, failed_state
from caseforge.flows.wiring import install
from caseforge.settings import Settings, load_settings, overriding
from caseforge.stopping import RunStopped, stop_of
from caseforge.warehouse.connection import open_warehouse

# A worker's flow-run process enters caseforge here (deployments/prefect.yaml): Prefect is wired in now, before
# its engine starts the flow run.
install()


def stage_state(outcome: StageOutcome):
    """What a stage's task run returns: its outcome, or a Failed state carrying it when the stage failed (or
    quarantined), so the task run shows Failed in the UI while the nightly goes on with the others."""
    if not outcome.failed:
        return outcome
    reasons = outcome.failures
    if not reasons:
        return failed_state(f"{outcome.stage} {outcome.name} {outcome.status}", outcome)
    summary = (f"1 problem: {reasons[0]}" if len(reasons) == 1
               else f"{len(reasons)} problems, first: {reasons[0]}; last: {reasons[-1]}")
    return failed_state(f"{outcome.stage} {outcome.name} {outcome.status}: {summary}", outcome)


def outcome_of(state) -> StageOutcome:
    """The outcome a stage's task run ended with, Completed or Failed (never raises for a failed stage)."""
    value = state.result(raise_on_failure=False)
    if isinstance(value, RunFailed):
        value = value.report
    if isinstance(value, StageOutcome):
        return value
    if isinstance(value, BaseException) and (request := stop_of(value)) is not None:
        raise RunStopped(request) from value      # the stage was stopped: so is the nightly
    if isinstance(value, DiskFull):
        raise value                               # the disk is full: the nightly stops, saying where
    raise FlowCrashed(f"a nightly stage ended {state.type.value.lower()} without an outcome: {state.message or value!r}")


@ends_as_stopped
def _source_stage(settings: Settings, source: registry.Source, kwargs: dict):
    return stage_state(run_source(settings, source, kwargs))


@ends_as_stopped
def _gated_stage(run: Callable[[], StageOutcome]):
    return stage_state(run())


source_task = task(name="nightly-source", cache_policy=NO_CACHE)(_source_stage)
stage_task = task(name="nightly-stage", cache_policy=NO_CACHE)(_gated_stage)


def prefect_sources(settings: Settings, planned: list) -> list[StageOutcome]:
    """Each source as a Prefect task run on the flow's thread pool (one task per source, not per row)."""
    futures = [source_task.with_options(task_run_name=f"source-{source.name}").submit(settings, source, kwargs)
               for source, kwargs in planned]
    for future in futures:
        future.wait()
    ended = []
    for future in futures:
        try:
            ended.append(outcome_of(future.state))
        except DiskFull as exc:                  # the others are kept: the night ends once all have
            ended.append(exc)
    return sources_ended(ended)


def prefect_stage(stage: str, name: str, run: Callable[[], StageOutcome]) -> StageOutcome:
    """A builder, an evaluation or an export as its own task run of the nightly (in the flow's thread: they
    share its DuckDB connection), named <stage>-<name>."""
    state = stage_task.with_options(name=f"nightly-{stage}", task_run_name=f"{stage}-{name}")(run, return_state=True)
    return outcome_of(state)


def _release_location(release_dir: str | None) -> Path | str | None:
    """--release-dir as a folder, or as the store URL it is (a Path would fold `s3://` into `s3:/`)."""
    from caseforge.release.stored import is_store_url

    return None if not release_dir else release_dir if is_store_url(release_dir) else Path(release_dir)


@flow(name="nightly", log_prints=True)
@ends_as_stopped
def nightly_refresh(db: str | None = None, from_samples: bool = False, samples_dir: str | None = None,
                    release_dir: str | None = None, sources: list[str] | None = None, force: bool = False,
                    settings: dict | None = None, reparse: bool = False):
    """Every source (in parallel), then each builder, evaluation and release whose inputs, LLM settings or
    prompts changed; one summary. `settings` is laid over the settings file for this run (a deployment's
    way to choose models, caps and fan-out). `reparse`: every source parses all its payloads again, also
    those its parser version already loaded (after a parser fix that kept its version)."""
    from caseforge.flows.nightly_report import problem_rows, publish_artifacts, quality_rows

    warehouse = load_settings(db)
    options = NightlyOptions(from_samples=from_samples, samples_dir=Path(samples_dir) if samples_dir else None,
                             release_dir=_release_location(release_dir), sources=sources, force=force,
                             reparse=reparse)
    with overriding(settings):
        result = run_nightly(warehouse, options, map_sources=prefect_sources, run_stage=prefect_stage)
    with open_warehouse(warehouse.db_path) as con:
        problems = problem_rows(con, result)
        publish_artifacts(result, quality_rows(con), problems)
    print(f"nightly run {result.run_id}: summary in {result.run_dir / 'summary.md'}")
    data = {**result.to_dict(), "problems": problems}
    if result.ok:
        return Completed(message=f"nightly {result.run_id}: ok{warned_text(result)}", data=data)
    return failed_state(failure_message(result), data)


def warned_text(result) -> str:
    """'; warned: source health cn (quiet: ...)' for the stages that warned (a warning fails nothing)."""
    warned = [f"{o.stage} {o.name} ({o.note})" for o in result.outcomes if o.status == "warned"]
    return f"; warned: {'; '.join(warned)}" if warned else ""


def failure_message(result) -> str:
    """The Failed run's message, which the failure notification carries: the failed stages, the first problems,
    and any stage that warned."""
    failed = [f"{o.stage} {o.name}" for o in result.outcomes if o.failed]
    failures = result.failures()
    return (f"nightly {result.run_id}: {len(failed)} stage(s) failed ({', '.join(failed)}), {len(failures)} "
            f"problem(s): " + "; ".join(failures[:3]) + warned_text(result))
