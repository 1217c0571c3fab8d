"""What a run shows in the orchestrator's UI: tables, markdown pages, links.

Any stage may publish; nothing here imports Prefect. The flows layer installs the publisher that
turns these calls into Prefect artifacts (caseforge.flows.wiring.install), and that publisher alone decides
whether a flow run is there to receive them. With no publisher installed (tests calling steps
directly, `caseforge sql`) every call does nothing.
"""
from __future__ import annotations

from typing import Protocol

from caseforge.stage_report import StageReport

MAX_FAILURES_SHOWN = 200


class Publisher(Protocol):
    def table(self, key: str, rows: list[dict], description: str) -> None: ...

    def markdown(self, key: str, markdown: str, description: str) -> None: ...

    def link(self, key: str, link: str, description: str) -> None: ...


_publisher: Publisher | None = None


def install(publisher: Publisher | None) -> None:
    """Route every artifact of this process to `publisher` (None: drop them)."""
    global _publisher
    _publisher = publisher


def artifact_key(text: str) -> str:
    """Artifact keys allow lower-case letters, digits and dashes."""
    return "-".join("".join(ch if ch.isalnum() else " " for ch in text.lower()).split())


def publish_table(key: str, rows: list[dict], description: str = "") -> None:
    if _publisher is not None:
        _publisher.table(artifact_key(key), rows, description)


def publish_markdown(key: str, markdown: str, description: str = "") -> None:
    if _publisher is not None:
        _publisher.markdown(artifact_key(key), markdown, description)


def publish_link(key: str, link: str, description: str = "") -> None:
    if _publisher is not None:
        _publisher.link(artifact_key(key), link, description)


def publish_counters(key: str, title: str, counts: dict, names: tuple[str, ...] | None = None) -> None:
    """A two-column table of counters (all of them, or the named ones in that order)."""
    chosen = names if names is not None else tuple(sorted(counts))
    publish_table(key, [{"counter": name, "value": counts.get(name, 0)} for name in chosen], title)


def publish_report(report: StageReport, key: str, title: str) -> None:
    """A stage's counters as a table and its failures as a markdown list."""
    publish_counters(key, f"{title} run {report.run_id}: {report.status}", report.counts)   # as "Nightly run 7: ..."
    if report.failures:
        lines = "\n".join(f"- {reason}" for reason in report.failures[:MAX_FAILURES_SHOWN])
        extra = len(report.failures) - MAX_FAILURES_SHOWN
        more = f"\n\n…and {extra} more" if extra > 0 else ""
        publish_markdown(f"{key}-failures", f"## {title}: failures\n\n{lines}{more}")


def publish_metrics(key: str, title: str, metrics: dict[str, float]) -> None:
    rows = [{"metric": name, "value": round(value, 4) if isinstance(value, float) else value}
            for name, value in sorted(metrics.items())]
    publish_table(key, rows, title)
