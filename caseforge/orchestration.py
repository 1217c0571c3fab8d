"""What every flow shares: a run session on the warehouse, artifacts, the final state."""
from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import duckdb

from caseforge.archive import RawArchive
from caseforge.config import Settings
from caseforge.runs import StageReport, finish_run, start_run
from caseforge.warehouse import connect, export_curated_parquet

log = logging.getLogger(__name__)


def quiet_prefect_defaults() -> None:
    """No telemetry from a closed machine; set before Prefect is imported."""
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


@dataclass
class RunSession:
    settings: Settings
    con: duckdb.DuckDBPyConnection
    archive: RawArchive
    run_id: int
    report: StageReport


@contextmanager
def run_session(settings: Settings, kind: str, target: str) -> Iterator[RunSession]:
    """Open the warehouse, record the run, and on the way out finish it and mirror curated to Parquet."""
    con = connect(settings.db_path)
    run_id = start_run(con, kind, target)
    report = StageReport(name=f"{kind} {target}", run_id=run_id)
    session = RunSession(settings, con, RawArchive(con), run_id, report)
    try:
        yield session
    except Exception as exc:
        report.fail(f"{target}: {type(exc).__name__}: {exc}")
        raise
    finally:
        try:
            finish_run(con, run_id, report)
            export_curated_parquet(con, settings.parquet_dir)
        finally:
            con.close()


def publish_counts(report: StageReport, key: str, title: str) -> None:
    """A table artifact of the report's counts and a markdown list of its failures (Prefect UI)."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact
    from prefect.context import FlowRunContext

    if FlowRunContext.get() is None:
        return
    rows = [{"counter": name, "value": value} for name, value in sorted(report.counts.items())]
    create_table_artifact(key=key, table=rows, description=f"{title} (run {report.run_id}): {report.status}")
    if report.failures:
        lines = "\n".join(f"- {reason}" for reason in report.failures[:200])
        more = f"\n\n…and {len(report.failures) - 200} more" if len(report.failures) > 200 else ""
        create_markdown_artifact(key=f"{key}-failures", markdown=f"## {title}: failures\n\n{lines}{more}")


def final_state(report: StageReport):
    """Completed when everything landed, Failed (with the report as data) otherwise."""
    from prefect.states import Completed, Failed

    data = report.to_dict()
    if report.ok:
        return Completed(message=f"{report.name}: ok", data=data)
    return Failed(message=f"{report.name}: {report.status}: {len(report.failures)} problem(s)", data=data)
