"""Prefect flow: ECHR judgments from HUDOC (live or replayed) into curated.echr_judgments and echr_paragraphs."""
from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

from caseforge.orchestration import quiet_prefect_defaults

quiet_prefect_defaults()

from prefect import flow, get_run_logger, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from caseforge.config import settings as load_settings  # noqa: E402
from caseforge.fetch import Fetcher  # noqa: E402
from caseforge.orchestration import RunSession, final_state, publish_counts, run_session  # noqa: E402
from caseforge.progress import Progress  # noqa: E402
from caseforge.tasks.hudoc import ingest  # noqa: E402
from caseforge.tasks.hudoc.metadata import RecordFilter  # noqa: E402

DOCUMENT_COUNTERS = ("html_fetched", "docx_fetched", "documents_parsed", "documents_quarantined",
                     "extra_bodies_ignored")
PARAGRAPH_COUNTERS = ("paragraphs_parsed", "paragraphs_loaded", "paragraphs_quarantined")


@task(name="hudoc-replay-metadata", cache_policy=NO_CACHE)
def replay_metadata_task(session: RunSession, paths: list[Path], record_filter: RecordFilter) -> None:
    ingest.replay_metadata(session.con, session.archive, session.run_id, paths, record_filter, session.report)


@task(name="hudoc-replay-documents", cache_policy=NO_CACHE)
def replay_documents_task(session: RunSession, documents: dict) -> None:
    ingest.replay_documents(session.con, session.archive, session.run_id, documents, session.report)


@task(name="hudoc-query-metadata", cache_policy=NO_CACHE)
def live_metadata_task(session: RunSession, fetcher: Fetcher, since: date, until: date,
                       record_filter: RecordFilter) -> None:
    ingest.live_metadata(fetcher, session.con, session.run_id, since, until, record_filter, session.report)


@task(name="hudoc-document-batch", cache_policy=NO_CACHE)
def live_documents_task(session: RunSession, fetcher: Fetcher, itemids: list[str]) -> None:
    ingest.live_documents_batch(fetcher, session.con, session.run_id, itemids, session.report)


def _publish_stage(report, key: str, title: str, names: tuple[str, ...]) -> None:
    from prefect.artifacts import create_table_artifact
    from prefect.context import FlowRunContext

    if FlowRunContext.get() is None:
        return
    rows = [{"counter": name, "value": report.counts.get(name, 0)} for name in names]
    create_table_artifact(key=key, table=rows, description=title)


@flow(name="hudoc-refresh", log_prints=True)
def hudoc_refresh(db: str | None = None, from_dir: str | None = None, since: str | None = None,
                  doctypes: list[str] | None = None, languages: list[str] | None = None,
                  documents: bool = True, max_documents: int = 5000):
    """Judgment metadata (query API paged by date windows, or replayed JSON) and judgment bodies
    (HTML, DOCX where the HTML is missing) split into paragraphs, each batch gated before curated."""
    logger = get_run_logger()
    settings = load_settings(db)
    record_filter = RecordFilter(tuple(doctypes) if doctypes is not None else ("HEJUD",),
                                 tuple(languages) if languages is not None else ("ENG",))
    with run_session(settings, "ingest", "hudoc") as session:
        report = session.report
        if from_dir:
            files = ingest.replay_files(Path(from_dir))
            replay_metadata_task(session, files.metadata, record_filter)
            if documents:
                replay_documents_task(session, files.documents)
        else:
            with Fetcher(settings, session.archive) as fetcher:
                start = ingest.incremental_since(session.con, since)
                until = date.today() + timedelta(days=1)
                logger.info("hudoc: judgments from %s to %s", start, until)
                live_metadata_task(session, fetcher, start, until, record_filter)
                if documents:
                    itemids = ingest.documents_to_fetch(session.con, max_documents)
                    progress = Progress("hudoc documents", total=len(itemids))
                    for batch in ingest.batches(itemids):
                        live_documents_task(session, fetcher, batch)
                        progress.step(len(batch))
                    progress.close()
                report.add("http_requests", fetcher.stats.requests)
                report.add("http_retries", fetcher.stats.retries)
    logger.info("hudoc: %s", ", ".join(f"{k}={v}" for k, v in sorted(report.counts.items())))
    publish_counts(report, "hudoc-refresh", "HUDOC refresh")
    _publish_stage(report, "hudoc-documents", "HUDOC documents", DOCUMENT_COUNTERS)
    _publish_stage(report, "hudoc-paragraphs", "HUDOC paragraphs", PARAGRAPH_COUNTERS)
    return final_state(report)
