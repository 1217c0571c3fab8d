"""Prefect flow: Bar Exam QA questions and passages (from files) into curated.barexam_*."""
from __future__ import annotations

from prefect import flow

from caseforge.artifacts import publish_report
from caseforge.flows.states import as_tasks, ends_as_stopped, final_state
from caseforge.settings import load_settings
from caseforge.tasks.barexam import ingest

PREFECT_STEPS = as_tasks(ingest.Steps(), "barexam")


@flow(name="barexam-import", log_prints=True)
@ends_as_stopped
def barexam_import(from_dir: str, db: str | None = None, reparse: bool = False):
    """Archive, parse, gate and curate barexam_qa.csv and passages_*.jsonl from a folder; a file this parser
    version loaded before is not parsed again unless `reparse`."""
    report = ingest.refresh(load_settings(db), from_dir=from_dir, steps=PREFECT_STEPS, reparse=reparse)
    publish_report(report, "barexam-import", "Bar Exam import")
    return final_state(report)
