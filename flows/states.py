"""How a flow's state tells what its work did, in Prefect as in ops.runs: steps made into task runs, the final
state a flow returns (Completed, or Failed carrying its report), reading that report back, and a run stopped by
a signal or a cancellation ending Cancelled (named Interrupted for a signal), even when the command has to
leave work behind."""
from __future__ import annotations

import dataclasses
import functools
import logging
import re
import signal
import time

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext, TaskRunContext
from prefect.states import Cancelled, Completed, Failed, State
from prefect.utilities.annotations import quote

from caseforge import stopping
from caseforge.stage_report import StageReport
from caseforge.stopping import RunStopped, StopRequest, stop_of


def as_tasks(steps, prefix: str):
    """A steps dataclass whose every step runs as its own Prefect task run, named <prefix>-<step>.

    The step's arguments reach Prefect quoted: Prefect walks every argument of a task run to find futures and
    states to wait on, element by element, and a step's are never those but can be large (a replayed folder's
    25,000 files took 3 s of a night to walk)."""
    return dataclasses.replace(steps, **{
        field.name: _quoting(task(name=f"{prefix}-{field.name.replace('_', '-')}", cache_policy=NO_CACHE)(
            under_way(getattr(steps, field.name))))
        for field in dataclasses.fields(steps)})


def _quoting(prefect_task):
    @functools.wraps(prefect_task, updated=())
    def call(*args, **kwargs):
        return prefect_task(*map(quote, args), **{name: quote(value) for name, value in kwargs.items()})
    return call


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
    """Completed when everything landed, Failed (with the report as data) otherwise: its message says what
    failed (the first problem, in one line), so a subflow that failed says why where it shows red."""
    data = report.to_dict()
    if report.ok:
        return Completed(message=f"{report.name}: ok", data=data)
    message = f"{report.name}: {report.status}: {len(report.failures)} problem(s)"
    if report.failures:
        first = " ".join(report.failures[0].split())
        message += f", first: {first if len(first) <= 300 else first[:299] + '…'}"
    return failed_state(message, data)


def run_subflow(flow, parameters: dict, name: str | None):
    """`flow` run on `parameters`, its final state returned. Named and inside a task run (a nightly stage): a
    flow run of that name whose parent is that task run, so the stage's task run stands for it on the timeline
    (Prefect's own subflow call adds a task run of its own, `<flow>-<uuid>`, with no logs, beside it)."""
    task_run, flow_run = TaskRunContext.get(), FlowRunContext.get()
    if name is None or task_run is None or flow_run is None:
        return flow(**parameters, return_state=True)
    from prefect.client.orchestration import get_client
    from prefect.context import TagsContext
    from prefect.flow_engine import run_flow
    from prefect.states import Pending
    from prefect.utilities.callables import get_call_parameters

    parameters = get_call_parameters(flow.fn, (), parameters)
    with get_client(sync_client=True) as client:
        if not _recorded(client, task_run.task_run.id):       # its parent must be there (a foreign key)
            return flow.with_options(flow_run_name=name)(**parameters, return_state=True)
        child = client.create_flow_run(flow, name=name, parameters=flow.serialize_parameters(parameters),
                                       parent_task_run_id=task_run.task_run.id, state=Pending(),
                                       tags=TagsContext.get().current_tags)
    return run_flow(flow, flow_run=child, parameters=parameters, return_type="state")


TASK_RUN_RECORDED_S = 30        # how long a subflow waits for the server to record its stage's task run


def _recorded(client, task_run_id) -> bool:
    """Whether the server has recorded the task run (Prefect 3 records task runs from their events, after the
    task has started: a flow run naming it as its parent before that is refused, 409, a foreign key); waits for it
    up to TASK_RUN_RECORDED_S. False: the subflow goes Prefect's own way (named, beside a task run of Prefect's)."""
    from prefect.exceptions import ObjectNotFound

    deadline = time.monotonic() + TASK_RUN_RECORDED_S
    while True:
        try:
            client.read_task_run(task_run_id)
            return True
        except ObjectNotFound:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.25)


def run_name(kind: str, target: str, run_id: int) -> str:
    """A run's name in Prefect: `nightly-7`, `ingest-oyez-12`, `eval-casefacts-bm25-14` (the id `status` shows)."""
    words = [kind] if kind == "nightly" else [kind, target]
    return "-".join(re.sub(r"[^a-z0-9]+", "-", word.lower()).strip("-") for word in words) + f"-{run_id}"


_NAMED: set = set()          # flow runs named already (a command's later runs, its mirror's publish, keep it)


def name_flow_run(kind: str, target: str, run_id: int) -> None:
    """When a command's flow (not a subflow: the nightly names those) records its run: the flow run takes the
    run's name (run_name), in Prefect and in this process."""
    context = FlowRunContext.get()
    flow_run = context.flow_run if context is not None else None
    if flow_run is None or flow_run.parent_task_run_id is not None or flow_run.id in _NAMED:
        return
    _NAMED.add(flow_run.id)
    from prefect.client.orchestration import get_client

    name = run_name(kind, target, run_id)
    with get_client(sync_client=True) as client:
        client.update_flow_run(flow_run.id, name=name)
    flow_run.name = name


class WithoutStateRepr(logging.Filter):
    """Drops Prefect's "Task run failed with state: Failed(message=..., type=FAILED, result=...)" record, logged
    with a traceback of no exception ("NoneType: None") for every task run that returns a Failed state: the
    task run's state message says it already, in its own words ("Finished in state Failed('...')")."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Task run failed with state: ")


def quiet_failed_state_records() -> None:
    """WithoutStateRepr on Prefect's task-run logger (every handler: the terminal and the run log), once."""
    logger = logging.getLogger("prefect.task_runs")
    if not any(isinstance(f, WithoutStateRepr) for f in logger.filters):
        logger.addFilter(WithoutStateRepr())


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
