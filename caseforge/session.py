"""A run session on the warehouse: every stage of a source, builder or evaluation runs inside one."""
from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import duckdb

from caseforge.archive import RawArchive
from caseforge.run_record import end_run, start_run
from caseforge.settings import Settings
from caseforge.stage_report import StageReport
from caseforge.stopping import stop_of
from caseforge.warehouse.connection import connect
from caseforge.warehouse.mirror import export_curated_parquet

log = logging.getLogger(__name__)


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
    exception ended it) and mirror curated to Parquet."""
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
        yield session
    except BaseException as exc:
        unfinished = True
        request = stop_of(exc)
        if request is not None:
            report.stopped(request)
        else:
            report.crashed(f"{target}: {type(exc).__name__}: {exc}")
        raise
    finally:
        con = end_run(session.con, run_id, report)
        if con is not None:
            try:
                export_curated_parquet(con, settings.parquet_dir)
            except Exception as exc:          # noqa: BLE001  (never hides why the run ended)
                if not unfinished:
                    raise
                log.warning("%s: the Parquet mirror was not rewritten: %s", report.name, exc)
            finally:
                con.close()
