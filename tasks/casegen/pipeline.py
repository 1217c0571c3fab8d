"""CaseGen build as plain steps; the Prefect flow passes task-wrapped versions of them."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from caseforge.session import RunSession, run_session
from caseforge.settings import Settings
from caseforge.stage_report import StageReport
from caseforge.tasks.casegen import build


def read_sources_step(session: RunSession, from_file: str | None, limit: int | None):
    if from_file:
        path = Path(from_file)
        return build.read_jsonl_records(session.con, session.run_id, path, session.report, limit), path.stem
    frame = build.select_source_rows(session.con, limit)
    session.report.add("records_read", len(frame))
    return frame, "cn_judgments"


def build_items_step(session: RunSession, records, source: str) -> int:
    return len(build.build_and_load(session.con, session.run_id, records, source, session.report))


@dataclass(frozen=True)
class BuildSteps:
    read_sources: Callable = read_sources_step
    build_items: Callable = build_items_step


def run_build(settings: Settings, from_file: str | None = None, limit: int | None = None,
              steps: BuildSteps | None = None) -> StageReport:
    steps = steps or BuildSteps()
    with run_session(settings, "build", "casegen") as session:
        records, source = steps.read_sources(session, from_file, limit)
        steps.build_items(session, records, source)
    return session.report
