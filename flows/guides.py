"""Prefect flow: ECHR case-law guides (PDF live, or PDF / text / page CSV replayed) into
curated.guide_paragraphs and curated.guide_citations, citations resolved to HUDOC itemids."""
from __future__ import annotations

from pathlib import Path

from caseforge.orchestration import quiet_prefect_defaults

quiet_prefect_defaults()

from prefect import flow, get_run_logger, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from caseforge.config import settings as load_settings  # noqa: E402
from caseforge.fetch import Fetcher  # noqa: E402
from caseforge.orchestration import RunSession, final_state, publish_counts, run_session  # noqa: E402
from caseforge.tasks.guides import ingest  # noqa: E402


@task(name="guides-parse-and-load", cache_policy=NO_CACHE)
def guides_task(session: RunSession, sources: list) -> None:
    resolver = ingest.make_resolver(session.con)
    for source in sources:
        parsed = ingest.parse_source(session.con, session.run_id, source, resolver, session.report)
        if parsed:
            ingest.load_guide(session.con, session.run_id, *parsed, session.report)


def _publish(report, rates: list[dict]) -> None:
    from prefect.artifacts import create_markdown_artifact, create_table_artifact
    from prefect.context import FlowRunContext

    if FlowRunContext.get() is None:
        return
    names = ("guide_files", "guides_fetched", "guides_parsed", "guides_quarantined")
    create_table_artifact(key="guides-documents", table=[{"counter": n, "value": report.counts.get(n, 0)} for n in names],
                          description="Guides read")
    names = ("guide_paragraphs_parsed", "guide_paragraphs_loaded", "guide_paragraphs_quarantined")
    create_table_artifact(key="guides-paragraphs", table=[{"counter": n, "value": report.counts.get(n, 0)} for n in names],
                          description="Guide paragraphs")
    names = ("citations_parsed", "citations_resolved", "citations_loaded", "citations_quarantined")
    create_table_artifact(key="guides-citations", table=[{"counter": n, "value": report.counts.get(n, 0)} for n in names],
                          description="Guide citations")
    rows = [{k: (float(v) if hasattr(v, "as_integer_ratio") and not isinstance(v, int) else v) for k, v in r.items()}
            for r in rates]
    create_table_artifact(key="guides-resolution-rate", table=rows or [{"guide_id": "-", "citations": 0}],
                          description="Citations resolved to a HUDOC itemid, per guide (sql/guides/resolution_rate.sql)")
    lines = "\n".join(f"- {r['guide_id']}: {r['resolved']}/{r['citations']} ({float(r['resolution_rate']):.1%})"
                      for r in rates)
    create_markdown_artifact(key="guides-resolution-summary", markdown=f"## Resolution rate\n\n{lines or 'no citations'}")


@flow(name="guides-refresh", log_prints=True)
def guides_refresh(db: str | None = None, from_dir: str | None = None, guide_ids: list[str] | None = None,
                   french_map: str | None = None):
    """Guides → paragraphs (headers removed, page breaks joined) → citations → itemids (links on the
    page first, then name + year against curated.echr_judgments), each table gated before curated."""
    logger = get_run_logger()
    settings = load_settings(db)
    with run_session(settings, "ingest", "guides") as session:
        report = session.report
        french = Path(french_map) if french_map else None
        if from_dir:
            sources, found = ingest.replay_sources(session.archive, Path(from_dir), report)
            french = french or found
        else:
            with Fetcher(settings, session.archive) as fetcher:
                sources = ingest.fetch_sources(fetcher, session.con, session.run_id,
                                               list(guide_ids or ingest.DEFAULT_GUIDES), report)
                report.add("http_requests", fetcher.stats.requests)
        if french:
            ingest.store_translations(session.con, session.archive, french, report)
        guides_task(session, sources)
        rates = ingest.resolution_rates(session.con)
        for rate in rates:
            logger.info("guides: %s resolved %s of %s citations (%.1f%%)", rate["guide_id"], rate["resolved"],
                        rate["citations"], 100 * float(rate["resolution_rate"]))
    logger.info("guides: %s", ", ".join(f"{k}={v}" for k, v in sorted(report.counts.items())))
    publish_counts(report, "guides-refresh", "Guides refresh")
    _publish(report, rates)
    return final_state(report)
