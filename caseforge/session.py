"""A run session on the warehouse: every stage of a source, builder or evaluation runs inside one."""
from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import duckdb

from caseforge.archive import RawArchive
from caseforge.config import Settings
from caseforge.runs import StageReport, finish_run, start_run
from caseforge.warehouse import connect, export_curated_parquet

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
    """Open the warehouse, record the run, and on the way out finish it and mirror curated to Parquet."""
    con = connect(settings.db_path)
    run_id = start_run(con, kind, target)
    report = StageReport(name=f"{kind} {target}", run_id=run_id)
    session = RunSession(settings, con, RawArchive(con), run_id, report)
    try:
        yield session
    except Exception as exc:
        report.fail(f"{target}: {type(exc).__name__}: {exc}")
        raise
    finally:
        try:
            finish_run(con, run_id, report)
            export_curated_parquet(con, settings.parquet_dir)
        finally:
            con.close()
