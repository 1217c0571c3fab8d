"""A run session on the warehouse: every stage of a source, builder or evaluation runs inside one."""
from __future__ import annotations

import logging
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterator

import duckdb

from caseforge.archive import RawArchive
from caseforge.disk_full import DiskFull, disk_full_line
from caseforge.outputs import OutputRefused, check_output_path
from caseforge.release.stored import is_store_url, local_folder
from caseforge.run_record import close_open_file, end_run, start_run, working_in
from caseforge.settings import Settings, using
from caseforge.stage_report import StageReport
from caseforge.stopping import stop_of
from caseforge.store import StoreError, open_store
from caseforge.warehouse.connection import connect
from caseforge.warehouse.mirror import export_curated_parquet
from caseforge.warehouse.published import publish_mirror

log = logging.getLogger(__name__)

# True inside a run that publishes the mirror once at its own end (the nightly): the runs it is made of
# (each source's) then only write the local mirror. Context variables travel into the nightly's source
# threads and Prefect task runs as `overriding` does.
_PUBLISH_AT_END: ContextVar[bool] = ContextVar("caseforge_publish_at_end", default=False)


def publish_at_end():
    """Runs started from here on (in this context) leave publishing to the caller's end; returns the token
    for `publish_after_each_run`."""
    return _PUBLISH_AT_END.set(True)


def publish_after_each_run(token) -> None:
    _PUBLISH_AT_END.reset(token)


@dataclass
class RunSession:
    settings: Settings
    con: duckdb.DuckDBPyConnection
    archive: RawArchive
    run_id: int
    report: StageReport


@contextmanager
def run_session(settings: Settings, kind: str, target: str) -> Iterator[RunSession]:
    """Open the warehouse, record the run, and on the way out write how it truly ended (succeeded, quarantined or
    failed when the work finished; interrupted or cancelled when it was stopped; failed with the reason when an
    exception ended it), mirror curated to Parquet, and publish the mirror ([mirror] publish) when the work
    finished. A publish that fails is a run of its own, recorded failed; the run's report gets its one line as a
    failure after the run's own end is written, so the command prints the run's summary first and exits 1. A run
    an exception or a stop ended publishes nothing: that one line is its only error, and the next run publishes.
    `settings` are the current ones for everything the session runs (its size checks, parse budgets, LLM jobs):
    handed down, not read again."""
    with using(settings):
        with _session(settings, kind, target) as session:
            yield session


@contextmanager
def _session(settings: Settings, kind: str, target: str) -> Iterator[RunSession]:
    con = connect(settings.db_path)
    try:
        run_id = start_run(con, kind, target)
    except BaseException:
        con.close()
        raise
    report = StageReport(name=f"{kind} {target}", run_id=run_id)
    session = RunSession(settings, con, RawArchive(con), run_id, report)
    unfinished = False
    try:
        with working_in(run_id):
            yield session
    except BaseException as exc:
        unfinished = True
        request = stop_of(exc)
        if request is not None:
            report.stopped(request)
            raise
        full = disk_full_line(exc, f"{kind} {target}", settings.db_path)
        report.crashed(full or f"{target}: {type(exc).__name__}: {exc}")
        if full is not None and not isinstance(exc, DiskFull):
            raise DiskFull(full) from exc        # said the same way by the command, the flow and the nightly
        raise
    finally:
        add_llm_cost(session.con, run_id, report)
        published = end_and_mirror(session.con, settings, run_id, report, unfinished=unfinished,
                                   publish=not (_PUBLISH_AT_END.get() or unfinished))
        if published is not None and not published.ok:
            report.fail(published.failures[0])      # after the run's end: its own status stays true


def end_and_mirror(con: duckdb.DuckDBPyConnection, settings: Settings, run_id: int, report: StageReport,
                   stages: list[list] | tuple = (), unfinished: bool = False,
                   publish: bool = True) -> StageReport | None:
    """Write the run's end, then the Parquet mirror (which carries that end) and, with `publish`, its publishing
    (publish_recorded's report, or None); closes `con`. A mirror the disk has no room for fails the run: its end
    is written again as failed with the one line that says so (kept in the open-run file when the warehouse cannot
    take it either: the next start records it) and DiskFull raised, unless the run had already failed
    (`unfinished`: only logged, never hiding why it ended)."""
    con = end_run(con, run_id, report, stages, keep_open_file=True)
    if con is None:
        return None
    published = None
    try:
        export_curated_parquet(con, settings.parquet_dir)
        published = publish_recorded(con, settings) if publish else None
        close_open_file(con, run_id)
    except Exception as exc:          # noqa: BLE001  (never hides why the run ended)
        line = disk_full_line(exc, f"{report.name}: the Parquet mirror", settings.parquet_dir)
        if unfinished or line is None:
            close_open_file(con, run_id)
            if not unfinished:
                raise
            log.warning("%s: the Parquet mirror was not rewritten or published: %s", report.name, exc)
            return None
        report.fail(line)
        now = datetime.now(timezone.utc)
        con = end_run(con, run_id, report, [*stages, ["mirror", "parquet", "failed", "{}", 0.0, line, now]])
        raise DiskFull(line) from exc
    finally:
        if con is not None:
            con.close()
    return published


# what a run's LLM calls cost, as its counts say it (the night's summary sums them; docs/llm.md, "What a run cost")
LLM_COST_COUNTS = ("llm_asked", "llm_prompt_tokens", "llm_completion_tokens", "llm_model_ms")


def add_llm_cost(con: duckdb.DuckDBPyConnection, run_id: int, report: StageReport) -> None:
    """The LLM calls this run asked (answered or not; cache hits cost nothing) in its counts: calls, prompt and
    completion tokens, milliseconds of model time. A warehouse that cannot say (a full disk) leaves them out."""
    from caseforge.warehouse.statements import run_sql

    try:
        cost = run_sql(con, "llm/run_cost.sql", [run_id]).fetchone()
    except duckdb.Error as exc:
        log.warning("%s: what its LLM calls cost could not be read: %s", report.name, exc)
        return
    if cost and cost[0]:
        for name, value in zip(LLM_COST_COUNTS, cost):
            report.counts[name] = int(value)


def publish_recorded(con: duckdb.DuckDBPyConnection, settings: Settings) -> StageReport | None:
    """When [mirror] publish names a store: the mirror's current generation published there
    (caseforge.warehouse.published), as a run of its own in ops.runs (kind `publish`, the store as its target),
    so a failed publish shows failed in `status` with its one-line reason. It reads only the mirror's files:
    the warehouse's data is never touched. None when nothing is configured."""
    mirror = settings.file.mirror
    if not mirror.publish:
        return None
    run_id = start_run(con, "publish", mirror.publish)
    report = StageReport(name=f"publish {mirror.publish}", run_id=run_id)
    folder = None if is_store_url(mirror.publish) else local_folder(mirror.publish)     # a full disk is named
    try:
        store = open_store(mirror.publish, endpoint_url=mirror.endpoint_url or None)
        if store.local:                 # a folder: never the warehouse's own files (docs/configuration.md)
            check_output_path(store.root, settings, "the published mirror")
        done = publish_mirror(settings.parquet_dir, store, mirror.keep, mirror.check_timeout_s)
        report.add("files_uploaded", len(done.uploaded))
        report.add("files_reused", done.reused)
        report.add("objects_pruned", len(done.pruned))
        report.add("generation", done.generation or 0)
    except (StoreError, OutputRefused) as exc:
        report.fail(disk_full_line(exc, report.name, folder) or f"mirror not published: {exc}")
    except Exception as exc:            # noqa: BLE001  (recorded as the publish's failure, in one line)
        report.fail(disk_full_line(exc, report.name, folder)
                    or f"mirror not published to {mirror.publish}: {type(exc).__name__}: {exc}")
    end_run(con, run_id, report)          # a failure is said by the run that published (once, not logged too)
    return report
