"""Prefect flow: refresh U.S. Supreme Court cases from Oyez (live or replayed) into curated.scotus_cases."""
from __future__ import annotations

from pathlib import Path

from caseforge.orchestration import quiet_prefect_defaults

quiet_prefect_defaults()

from prefect import flow, get_run_logger, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from caseforge.config import settings as load_settings  # noqa: E402
from caseforge.fetch import Fetcher  # noqa: E402
from caseforge.orchestration import RunSession, final_state, publish_counts, run_session  # noqa: E402
from caseforge.progress import Progress  # noqa: E402
from caseforge.tasks.oyez import ingest  # noqa: E402


@task(name="oyez-legacy-table", cache_policy=NO_CACHE)
def legacy_task(session: RunSession, path: str) -> None:
    ingest.import_legacy(session.con, session.archive, session.run_id, Path(path), session.report)


@task(name="oyez-case-list", cache_policy=NO_CACHE)
def list_task(session: RunSession, fetcher: Fetcher, term: str | None, full: bool) -> list:
    summaries = ingest.fetch_list(fetcher, term, session.report)
    if summaries is None and not full:
        return []
    if summaries is None:  # --full with an unchanged list: plan from the archived copy
        key, _, _ = ingest.list_request(term)
        summaries = ingest.parse_case_list(session.archive.latest(ingest.SOURCE, key).body)
    session.report.add("listed", len(summaries))
    planned, unchanged = ingest.plan_from_list(session.con, summaries, full)
    session.report.add("unchanged_in_list", unchanged)
    return planned


@task(name="oyez-detail-batch", cache_policy=NO_CACHE)
def live_batch_task(session: RunSession, fetcher: Fetcher, batch: list) -> None:
    ingest.process_live_batch(fetcher, session.con, session.run_id, batch, session.report)


@task(name="oyez-replay-batch", cache_policy=NO_CACHE)
def replay_batch_task(session: RunSession, paths: list[Path]) -> None:
    payloads = ingest.archive_replay_batch(session.archive, paths)
    frame = ingest.parse_payloads(session.con, session.run_id, payloads, session.report)
    ingest.load_cases(session.con, session.run_id, frame, session.report)


@flow(name="oyez-refresh", log_prints=True)
def oyez_refresh(db: str | None = None, from_dir: str | None = None, term: str | None = None,
                 full: bool = False, legacy_table: str | None = None):
    """Fetch (or replay) Oyez case details, parse, gate and upsert curated.scotus_cases.

    Live: only cases new or changed in the case list are fetched (all with `full`), so a
    nightly run with nothing new upstream downloads the list alone. Replay: every case JSON
    under `from_dir` goes through the same archive → parse → gate → curate path.
    """
    logger = get_run_logger()
    settings = load_settings(db)
    with run_session(settings, "ingest", "oyez") as session:
        report = session.report
        if legacy_table:
            legacy_task(session, legacy_table)
        if from_dir:
            details, lists = ingest.replay_files(Path(from_dir))
            report.add("list_files_seen", len(lists))
            progress = Progress("oyez replay", total=len(details))
            for batch in ingest.batches(details):
                replay_batch_task(session, batch)
                progress.step(len(batch))
            progress.close()
        else:
            with Fetcher(settings, session.archive) as fetcher:
                planned = list_task(session, fetcher, term, full)
                logger.info("oyez: %d case details to fetch", len(planned))
                progress = Progress("oyez details", total=len(planned))
                for batch in ingest.batches(planned):
                    live_batch_task(session, fetcher, batch)
                    progress.step(len(batch))
                progress.close()
                report.add("http_requests", fetcher.stats.requests)
                report.add("http_retries", fetcher.stats.retries)
                report.add("http_not_modified", fetcher.stats.not_modified)
        report.counts.setdefault("changed", 0)
        report.counts.setdefault("new", 0)
    logger.info("oyez: %s", ", ".join(f"{k}={v}" for k, v in sorted(report.counts.items())))
    publish_counts(report, "oyez-refresh", "Oyez refresh")
    return final_state(report)
