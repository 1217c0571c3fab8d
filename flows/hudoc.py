"""Prefect flow: ECHR judgments from HUDOC (live or replayed) into curated.echr_judgments and echr_paragraphs."""
from __future__ import annotations

from prefect import flow

from caseforge.artifacts import publish_report
from caseforge.flows.states import as_tasks, ends_as_stopped, final_state
from caseforge.settings import load_settings
from caseforge.tasks.hudoc import ingest

PREFECT_STEPS = as_tasks(ingest.Steps(), "hudoc")


@flow(name="hudoc-refresh", log_prints=True)
@ends_as_stopped
def hudoc_refresh(db: str | None = None, from_dir: str | None = None, since: str | None = None,
                  doctypes: list[str] | None = None, languages: list[str] | None = None,
                  documents: bool = True, max_documents: int = 5000, reparse: bool = False):
    """Judgment metadata (the query API paged by date windows, or replayed JSON) and judgment bodies
    (HTML, DOCX where the HTML is missing) split into paragraphs, each batch gated before curated; a replayed
    file this parser version loaded before is not parsed again unless `reparse`."""
    report = ingest.refresh(load_settings(db), from_dir=from_dir, since=since, doctypes=doctypes,
                            languages=languages, documents=documents, max_documents=max_documents,
                            steps=PREFECT_STEPS, reparse=reparse)
    publish_report(report, "hudoc-refresh", "HUDOC refresh")
    return final_state(report)
