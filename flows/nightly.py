"""Prefect flow: the nightly refresh (deployment `nightly` in deployments/prefect.yaml). caseforge.flows.nightly_runner
does the work; here each source is a task run of this flow, each builder, evaluation and release a task run of
its own, and the run ends Completed, or Failed with the stages that failed."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed

from caseforge.disk_full import DiskFull
from caseforge.flows.nightly_plan import Stage, release_location
from caseforge.flows.nightly_report import RECORD_PROBLEM
from caseforge.flows.nightly_runner import NightlyOptions, StageOutcome, parallel_ended, run_nightly
from caseforge.flows.states import FlowCrashed, RunFailed, ends_as_stopped, failed_state
from caseforge.flows.wiring import install
from caseforge.settings import load_settings, overriding
from caseforge.stage_report import one_line
from caseforge.stopping import RunStopped, stop_of
from caseforge.warehouse.connection import open_warehouse

# A worker's flow-run process enters caseforge here (deployments/prefect.yaml): Prefect is wired in now, before
# its engine starts the flow run.
install()


def stage_state(outcome: StageOutcome):
    """What a stage's task run ends in, its one line (StageOutcome.line) as the state's message: Completed
    (skipped ones too, with their reason), or Failed carrying the outcome when the stage failed (or quarantined),
    so the task run shows Failed in the UI while the nightly goes on with the others."""
    if outcome.failed:
        return failed_state(outcome.line(), outcome)
    return Completed(message=outcome.line(), data=outcome)


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
def _stage(run: Callable[[], StageOutcome]):
    return stage_state(run())


stage_task = task(name="nightly-stage", cache_policy=NO_CACHE)(_stage)


def _publish_details(result, quality: list[dict], problems: list[dict]) -> None:
    from caseforge.flows.nightly_report import publish_details

    publish_details(result, quality, problems)


# The night's artifacts besides its summary, from a task run of their own: the UI lists a flow run's own artifacts
# (the summary) before those of its task runs.
report_task = task(name="nightly-report", task_run_name="report", cache_policy=NO_CACHE)(_publish_details)


def _task_of(stage: Stage):
    return stage_task.with_options(name=f"nightly-{stage.kind}", task_run_name=stage.task_name)


def prefect_parallel(stages: list[Stage], run: Callable[[Stage], StageOutcome]) -> list[StageOutcome]:
    """Each parallel stage (the sources) a task run on the flow's thread pool, named <kind>-<name>."""
    futures = [_task_of(stage).submit(functools.partial(run, stage)) for stage in stages]
    for future in futures:
        future.wait()
    ended = []
    for future in futures:
        try:
            ended.append(outcome_of(future.state))
        except DiskFull as exc:                  # the others are kept: the night ends once all have
            ended.append(exc)
    return parallel_ended(ended)


def prefect_stage(stage: Stage, run: Callable[[], StageOutcome]) -> StageOutcome:
    """Any other stage (a builder, an evaluation, a release) a task run of its own in the flow's thread (they
    share its DuckDB connection), named <kind>-<name>: a skipped stage too, Completed with its reason."""
    return outcome_of(_task_of(stage)(run, return_state=True))


@flow(name="nightly", log_prints=True)
@ends_as_stopped
def nightly_refresh(db: str | None = None, from_samples: bool = False, samples_dir: str | None = None,
                    release_dir: str | None = None, sources: list[str] | None = None, force: bool = False,
                    settings: dict | None = None, reparse: bool = False):
    """Every source (in parallel), then each builder, evaluation and release whose inputs, LLM settings or
    prompts changed; one summary. `settings` is laid over the settings file for this run (a deployment's
    way to choose models, caps and fan-out). `reparse`: every source parses all its payloads again, also
    those its parser version already loaded (after a parser fix that kept its version)."""
    from caseforge.flows.nightly_report import problem_rows, publish_summary, quality_rows

    options = NightlyOptions(from_samples=from_samples, samples_dir=Path(samples_dir) if samples_dir else None,
                             release_dir=release_location(release_dir), sources=sources, force=force,
                             reparse=reparse)
    with overriding(settings):             # the run's settings: the current ones, the overrides laid over them
        warehouse = load_settings(db)
        result = run_nightly(warehouse, options, map_parallel=prefect_parallel, run_stage=prefect_stage)
    with open_warehouse(warehouse.db_path) as con:
        problems, quality = problem_rows(con, result), quality_rows(con)
    publish_summary(result)
    report_task(result, quality, problems)
    print(f"nightly run {result.run_id}: summary in {result.run_dir / 'summary.md'}")
    data = {**result.to_dict(), "problems": problems}
    if result.ok:
        return Completed(message=f"nightly {result.run_id}: ok{warned_text(result)}", data=data)
    return failed_state(failed_message(result), data)


def failed_message(result) -> str:
    """The failed nightly's state message (what a failure notification carries): which stages failed, each
    stage's own line, and the first record quarantined (the lines only count those)."""
    failed = [o for o in result.outcomes if o.failed]
    message = (f"nightly {result.run_id}: {len(failed)} stage(s) failed "
               f"({', '.join(f'{o.stage} {o.name}' for o in failed)}), {len(result.failures())} problem(s): "
               + "; ".join(o.line() for o in failed))
    records = [f for o in failed for f in o.failures if RECORD_PROBLEM.fullmatch(f)]
    return message + (f"; first record quarantined: {one_line(records[0])}" if records else "") + warned_text(result)


def warned_text(result) -> str:
    """'; warned: source health cn (quiet: ...)' for the stages that warned (a warning fails nothing)."""
    warned = [o.line() for o in result.outcomes if o.status == "warned"]
    return f"; warned: {'; '.join(warned)}" if warned else ""
