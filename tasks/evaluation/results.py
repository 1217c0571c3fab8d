"""Results tables as Prefect artifacts (no-ops outside a flow run)."""
from __future__ import annotations


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")


def publish_metrics(key: str, title: str, metrics: dict[str, float]) -> None:
    from prefect.artifacts import create_table_artifact
    from prefect.context import FlowRunContext

    if FlowRunContext.get() is None:
        return
    rows = [{"metric": name, "value": round(value, 4)} for name, value in sorted(metrics.items())]
    create_table_artifact(key=_slug(key), table=rows, description=title)


def publish_table(key: str, title: str, rows: list[dict]) -> None:
    from prefect.artifacts import create_table_artifact
    from prefect.context import FlowRunContext

    if FlowRunContext.get() is None:
        return
    create_table_artifact(key=_slug(key), table=rows, description=title)
