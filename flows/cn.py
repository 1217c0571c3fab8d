"""Prefect flow: Chinese court judgments from bulk dumps into curated.cn_judgments, then filters
(curated.cn_filter_decisions) and, on request, representatives (curated.cn_representatives)."""
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
from caseforge.tasks.cn import curate, ingest  # noqa: E402
from caseforge.tasks.cn.api import WenshuClient, WenshuCredentials  # noqa: E402
from caseforge.tasks.cn.filters import FilterConfig, load_filter_config  # noqa: E402
from caseforge.tasks.cn.select import TFIDF  # noqa: E402


@task(name="cn-dump-batch", cache_policy=NO_CACHE)
def dump_batch_task(session: RunSession, batch: list) -> None:
    frame = ingest.parse_batch(session.con, session.run_id, batch, session.report)
    ingest.load_judgments(session.con, session.run_id, frame, session.report)


@task(name="cn-api-batch", cache_policy=NO_CACHE)
def api_batch_task(session: RunSession, client, doc_ids: list[str]) -> None:
    fetched = ingest.fetch_documents(client, session.con, session.run_id, doc_ids, session.report)
    frame = ingest.parse_batch(session.con, session.run_id, fetched, session.report)
    ingest.load_judgments(session.con, session.run_id, frame, session.report)


@task(name="cn-filters", cache_policy=NO_CACHE)
def filter_task(session: RunSession, config: FilterConfig) -> list[dict]:
    curate.apply_filters(session.con, config, session.report)
    return curate.filter_reason_counts(session.con, config)


@task(name="cn-representatives", cache_policy=NO_CACHE)
def select_task(session: RunSession, config: FilterConfig, embedder: str, n: int, k: int, seed: int) -> str | None:
    return curate.select(session.con, config, embedder, n, k, seed, session.report)


def _publish_tables(coverage: list[dict], reasons: list[dict], config: FilterConfig) -> None:
    from prefect.artifacts import create_table_artifact
    from prefect.context import FlowRunContext

    if FlowRunContext.get() is None:
        return
    rows = [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()} for row in coverage]
    create_table_artifact(key="cn-section-coverage", table=rows or [{"source_format": "-", "documents": 0}],
                          description="Share of curated judgments with each section, by source format")
    create_table_artifact(key="cn-filter-reasons", table=reasons or [{"reason": "-", "documents": 0}],
                          description=f"Documents excluded by filter {config.key}, per reason")


@flow(name="cn-judgments", log_prints=True)
def cn_refresh(db: str | None = None, from_dir: str | None = None, doc_ids: str | None = None,
               filters: str | None = None,
               select_n: int = 0, clusters: int = 10, embedder: str = TFIDF, seed: int = 0):
    """Import judgment dumps under `from_dir` (and/or documents listed in `doc_ids`, fetched with the
    user's own session, see tasks/cn/api.py), parse sections, gate and upsert; filter; optionally select.

    Every dump file is archived before parsing; unreadable files and rows are quarantined with
    their reason. Filters run over all curated judgments, and with select_n > 0 the kept ones
    are embedded and select_n representatives are picked across `clusters` K-Means clusters.
    """
    logger = get_run_logger()
    settings = load_settings(db)
    config = load_filter_config(filters)
    with run_session(settings, "ingest", "cn") as session:
        report = session.report
        if from_dir:
            directory = Path(from_dir)
            paths = ingest.dump_files(directory)
            progress = Progress("cn dumps", total=len(paths))
            for batch in ingest.batches_of_records(session.con, session.run_id, session.archive, directory,
                                                   paths, report):
                dump_batch_task(session, batch)
            progress.step(len(paths))
            progress.close()
        if doc_ids:
            ids = ingest.read_doc_ids(Path(doc_ids))
            with Fetcher(settings, session.archive) as fetcher:
                client = WenshuClient(fetcher, WenshuCredentials.from_env())
                for batch in ingest.batches(ids):
                    api_batch_task(session, client, batch)
                report.add("http_requests", fetcher.stats.requests)
                report.add("http_retries", fetcher.stats.retries)
        report.counts.setdefault("new", 0)
        report.counts.setdefault("changed", 0)
        reasons = filter_task(session, config)
        if select_n > 0:
            select_task(session, config, embedder, select_n, clusters, seed)
        coverage = ingest.section_coverage(session.con)
    logger.info("cn: %s", ", ".join(f"{k}={v}" for k, v in sorted(report.counts.items())))
    publish_counts(report, "cn-judgments", "Chinese judgments")
    _publish_tables(coverage, reasons, config)
    return final_state(report)
