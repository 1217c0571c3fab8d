"""Prefect flow: gold judgment sections → CaseGen task items in curated.casegen_items."""
from __future__ import annotations

from prefect import flow

from caseforge.artifacts import publish_report
from caseforge.flows.states import as_tasks, ends_as_stopped, final_state
from caseforge.settings import load_settings
from caseforge.tasks.casegen import pipeline

PREFECT_STEPS = as_tasks(pipeline.BuildSteps(), "casegen")


@flow(name="casegen-build", log_prints=True)
@ends_as_stopped
def casegen_build(db: str | None = None, from_file: str | None = None, limit: int | None = None):
    """Build the four drafting tasks (defense, facts, reasoning, judgment) from gold sections.

    Source: curated.cn_judgments (the representatives, when curated.cn_representatives exists), or
    CaseGen-format JSONL records given with `from_file`. A task whose gold sections are absent is
    recorded in curated.casegen_item_skips with the reason.
    """
    report = pipeline.run_build(load_settings(db), from_file=from_file, limit=limit, steps=PREFECT_STEPS)
    publish_report(report, "casegen-build", "CaseGen items")
    return final_state(report)
