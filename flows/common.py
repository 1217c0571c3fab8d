"""What every flow shares: caseforge.artifacts published as Prefect artifacts, LLM steps fanned out as
Prefect flow runs when the settings name a worker pool, plain steps made into tasks, the final state a flow
returns, and reading that state back."""
from __future__ import annotations

import dataclasses

from prefect import task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext, TaskRunContext
from prefect.states import Completed, Failed

from caseforge import artifacts
from caseforge.flows.llm_shard import PrefectShardRuns
from caseforge.llm import fanout
from caseforge.runs import StageReport


class PrefectArtifacts:
    """caseforge.artifacts → Prefect artifacts, inside a flow or task run only (elsewhere: nothing)."""

    @staticmethod
    def _inside_a_run() -> bool:
        return FlowRunContext.get() is not None or TaskRunContext.get() is not None

    def table(self, key: str, rows: list[dict], description: str) -> None:
        if self._inside_a_run():
            create_table_artifact(key=key, table=rows or [{"": "no rows"}], description=description)

    def markdown(self, key: str, markdown: str, description: str) -> None:
        if self._inside_a_run():
            create_markdown_artifact(key=key, markdown=markdown, description=description)

    def link(self, key: str, link: str, description: str) -> None:
        if self._inside_a_run():
            create_link_artifact(key=key, link=link, description=description)


artifacts.install(PrefectArtifacts())
fanout.install(PrefectShardRuns())


def as_tasks(steps, prefix: str):
    """A steps dataclass whose every step runs as its own Prefect task run, named <prefix>-<step>."""
    return dataclasses.replace(steps, **{
        field.name: task(name=f"{prefix}-{field.name.replace('_', '-')}", cache_policy=NO_CACHE)(
            getattr(steps, field.name))
        for field in dataclasses.fields(steps)})


def final_state(report: StageReport):
    """Completed when everything landed, Failed (with the report as data) otherwise."""
    data = report.to_dict()
    if report.ok:
        return Completed(message=f"{report.name}: ok", data=data)
    return Failed(message=f"{report.name}: {report.status}: {len(report.failures)} problem(s)", data=data)


class FlowCrashed(RuntimeError):
    """A flow ended without a report: an exception escaped it."""


def report_of(state) -> dict:
    """The report dict a flow's final state carries; FlowCrashed with the reason when it carries none."""
    data = state.result(raise_on_failure=False)
    if isinstance(data, BaseException):
        raise FlowCrashed(f"{type(data).__name__}: {data}")
    if not isinstance(data, dict):
        raise FlowCrashed(f"flow ended {state.type.value.lower()} without a report: {state.message or data!r}")
    return data
