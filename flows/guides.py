"""Prefect flow: ECHR case-law guides (PDF live, or PDF / text / page CSV replayed) into
curated.guide_paragraphs and curated.guide_citations, citations resolved to HUDOC itemids."""
from __future__ import annotations

from prefect import flow

from caseforge.artifacts import publish_report
from caseforge.flows.states import as_tasks, ends_as_stopped, final_state
from caseforge.settings import load_settings
from caseforge.tasks.guides import ingest

PREFECT_STEPS = as_tasks(ingest.Steps(), "guides")


@flow(name="guides-refresh", log_prints=True)
@ends_as_stopped
def guides_refresh(db: str | None = None, from_dir: str | None = None, guide_ids: list[str] | None = None,
                   french_map: str | None = None, reparse: bool = False):
    """Guides → paragraphs (headers removed, page breaks joined) → citations → itemids (links on the
    page first, then name + year against curated.echr_judgments), each table gated before curated; a guide
    this parser version loaded before against the same judgments is not parsed again unless `reparse`."""
    report = ingest.refresh(load_settings(db), from_dir=from_dir, guide_ids=guide_ids, french_map=french_map,
                            steps=PREFECT_STEPS, reparse=reparse)
    publish_report(report, "guides-refresh", "Guides refresh")
    return final_state(report)
