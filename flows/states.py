"""How a flow's state tells what its work did, in Prefect as in ops.runs: steps made into task runs, the final
state a flow returns (Completed, or Failed carrying its report), reading that report back, and a run stopped by
a signal or a cancellation ending Cancelled (named Interrupted for a signal), even when the command has to
leave work behind."""
from __future__ import annotations

import dataclasses
import functools
import signal

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext, TaskRunContext
from prefect.states import Cancelled, Completed, Failed, State

from caseforge import stopping
from caseforge.stage_report import StageReport
from caseforge.stopping import RunStopped, StopRequest, stop_of


def as_tasks(steps, prefix: str):
    """A steps dataclass whose every step runs as its own Prefect task run, named <prefix>-<step>."""
    return dataclasses.replace(steps, **{
        field.name: task(name=f"{prefix}-{field.name.replace('_', '-')}", cache_policy=NO_CACHE)(
            under_way(getattr(steps, field.name)))
        for field in dataclasses.fields(steps)})


class RunFailed(Exception):
    """What a Failed state this project returns carries as its data: the state's message and the report (a
    flow's report dict, or a nightly stage's outcome).

    Prefect turns a Failed state's data into an exception wherever the failure is raised
    (prefect.states.get_state_exception): in a process worker's flow-run process, `run_flow` asks the final
    state for its result that way. Data that is neither an exception, a string nor a state (the report dict
    these states used to carry) cannot be: Prefect raised `TypeError: Unexpected result for failed state:
    {...} —— dict cannot be resolved into an exception` there instead of the run's own failure. As an
    exception the report is raised as itself, and `report_of` reads it back."""

    def __init__(self, message: str, report):
        super().__init__(message, report)          # both in args: it pickles (result persistence)
        self.message = message
        self.report = report

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:              # Prefect logs a failed state with its data's repr: keep it short
        short = self.message if len(self.message) <= 300 else self.message[:300] + "…"
        return f"RunFailed({short!r})"


def failed_state(message: str, report):
    """A Failed state carrying `report` (see RunFailed)."""
    return Failed(message=message, data=RunFailed(message, report))


def final_state(report: StageReport):
    """Completed when everything landed, Failed (with the report as data) otherwise."""
    data = report.to_dict()
    if report.ok:
        return Completed(message=f"{report.name}: ok", data=data)
    return failed_state(f"{report.name}: {report.status}: {len(report.failures)} problem(s)", data)


class FlowCrashed(RuntimeError):
    """A flow ended without a report: an exception escaped it (`error`, when the state carries it)."""

    def __init__(self, message: str, error: BaseException | None = None):
        super().__init__(message)
        self.error = error


def report_of(state) -> dict:
    """The report dict a flow's final state carries; FlowCrashed with the reason when it carries none;
    RunStopped when the run was stopped (interrupted or cancelled)."""
    if state.is_cancelled():
        raise RunStopped(_stop_carried_by(state))
    data = state.result(raise_on_failure=False)
    if isinstance(data, RunFailed):
        data = data.report
    if isinstance(data, BaseException):
        raise FlowCrashed(f"{type(data).__name__}: {data}", data)
    if not isinstance(data, dict):
        raise FlowCrashed(f"flow ended {state.type.value.lower()} without a report: {state.message or data!r}")
    return data


# --- a run stopped by a signal or a cancellation ends Interrupted / Cancelled, in Prefect too ---

def _stop_carried_by(state) -> StopRequest:
    try:
        data = state.result(raise_on_failure=False)
    except Exception:                       # noqa: BLE001  (a cancellation of Prefect's own carries nothing)
        data = None
    if isinstance(data, RunStopped):
        return data.request
    return stopping.stop_requested() or StopRequest("cancelled", "a Prefect cancellation", 128 + signal.SIGTERM)


def stopped_state(request: StopRequest, carry: bool = True):
    """The state a stopped flow or nightly stage ends in: Cancelled, named Interrupted for a signal, with the
    runs this process recorded as stopped; `carry`: with the stop as its data (report_of raises it)."""
    name = "Interrupted" if request.state == "interrupted" else "Cancelled"
    return Cancelled(name=name, message=f"{request.reason}{stopping.stopped_note()}",
                     data=RunStopped(request) if carry else None)


def _prefect_owns_the_end() -> bool:
    """A SIGTERM by which Prefect's runner reschedules or hands the run on: Prefect proposes the next state."""
    from prefect._internal import control_listener

    return control_listener.get_intent() in ("reschedule", "relinquish")


_UNDER_WAY: dict[tuple, object] = {}     # (flow | task, run id) → the task run a subflow stands for, or None


def under_way(fn):
    """Under @flow or @task: while the run is in this function it is known as under way, and so is a run that
    ended stopped (Prefect's engine may not have reported its end yet), so a command that must leave without
    it (a thread stuck in a read) still ends it in Prefect (mark_abandoned_runs)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        key, parent = _this_run()
        if key is not None:
            _UNDER_WAY[key] = parent
        ended = False
        try:
            result = fn(*args, **kwargs)
            ended = not (isinstance(result, State) and result.is_cancelled())
            return result
        except BaseException as exc:
            ended = stop_of(exc) is None
            raise
        finally:
            if ended:
                _UNDER_WAY.pop(key, None)
    return run


def ends_as_stopped(fn):
    """Under @flow (or a nightly stage's @task): a run stopped by SIGINT, SIGTERM or a Prefect cancellation ends
    in stopped_state instead of Crashed ("Execution was aborted by an interrupt signal")."""
    @functools.wraps(fn)
    @under_way
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BaseException as exc:
            request = stop_of(exc)
            if request is None or _prefect_owns_the_end():
                raise
            return stopped_state(request)
    return run


def _this_run() -> tuple[tuple | None, object]:
    """(("task" | "flow", id), parent task run id) of the run whose function is being called."""
    task_run, flow_run = TaskRunContext.get(), FlowRunContext.get()
    flow_run = flow_run.flow_run if flow_run is not None else None
    if task_run is not None and (flow_run is None or task_run.task_run.flow_run_id == flow_run.id):
        return ("task", task_run.task_run.id), None
    if flow_run is not None:                        # a flow, or a subflow called from a task of its parent
        return ("flow", flow_run.id), flow_run.parent_task_run_id
    return None, None


def mark_abandoned_runs(request: StopRequest) -> None:
    """Before a stopped command leaves work behind: its flow and task runs still under way end in Prefect as
    they do in ops.runs (a subflow's stand-in task run of its parent too), not `Running` for ever."""
    from prefect.client.orchestration import get_client

    under_way = dict(_UNDER_WAY)
    if not under_way:
        return
    with get_client(sync_client=True) as client:
        for (kind, run_id), parent_task in under_way.items():
            if kind == "flow":
                client.set_flow_run_state(run_id, stopped_state(request, carry=False), force=True)
            if kind == "task" or parent_task:
                client.set_task_run_state(parent_task or run_id, stopped_state(request, carry=False), force=True)
