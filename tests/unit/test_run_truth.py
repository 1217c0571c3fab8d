"""Every run ends in a true state in ops.runs: work stopped by SIGINT / SIGTERM is `interrupted` (never
`succeeded`, never `quarantined` because some rows were quarantined before the stop), a run that dies of an
exception is `failed` with the reason, and `succeeded` only when the work finished."""
from __future__ import annotations

import pytest

from caseforge.session import run_session
from caseforge.settings import load_settings
from caseforge.warehouse.connection import connect


def run_row(db, run_id):
    con = connect(db)
    try:
        cursor = con.execute("SELECT status, message, finished_at FROM ops.runs WHERE run_id = ?", [run_id])
        return dict(zip([d[0] for d in cursor.description], cursor.fetchone()))
    finally:
        con.close()


def test_a_run_stopped_by_ctrl_c_part_way_is_interrupted_not_succeeded(db_path):
    with pytest.raises(KeyboardInterrupt):
        with run_session(load_settings(db_path), "ingest", "hudoc") as session:
            session.report.add("documents_parsed", 634)       # 634 of 1,600 bodies, then Ctrl-C
            raise KeyboardInterrupt
    row = run_row(db_path, session.run_id)
    assert row["status"] == "interrupted", row
    assert "SIGINT" in row["message"] and row["finished_at"] is not None


def test_a_run_stopped_after_quarantining_rows_is_interrupted_not_quarantined(db_path):
    with pytest.raises(KeyboardInterrupt):
        with run_session(load_settings(db_path), "ingest", "cn") as session:
            session.report.add("quarantined", 3)              # 40 of 64 batches ran, some rows quarantined
            session.report.fail("cn file/a.jsonl line 3: not JSON")
            raise KeyboardInterrupt
    assert run_row(db_path, session.run_id)["status"] == "interrupted"


def test_a_run_that_dies_of_an_exception_is_failed_with_the_reason_even_after_quarantines(db_path):
    with pytest.raises(OSError):
        with run_session(load_settings(db_path), "ingest", "cn") as session:
            session.report.add("quarantined", 2)
            raise OSError(28, "No space left on device")
    row = run_row(db_path, session.run_id)
    assert row["status"] == "failed", row
    assert row["message"].startswith("ingest cn: the disk is full (no space left on /"), row   # the disk named


def test_a_run_that_finished_its_work_is_succeeded(db_path):
    with run_session(load_settings(db_path), "ingest", "oyez") as session:
        session.report.add("new", 1)
    assert run_row(db_path, session.run_id)["status"] == "succeeded"


def test_a_nightly_stopped_in_a_builder_records_the_builder_and_every_later_stage_interrupted(tmp_path):
    """Ctrl-C while the nightly's CaseFacts builder works (a long LLM step): the builder's own run, its stage
    and the stages not yet started are interrupted; what finished before keeps its state."""
    from registry_doubles import BuilderDouble, ReleaseDouble, SourceDouble

    from caseforge.flows import nightly_runner
    from caseforge.stage_report import StageReport

    def source_double(settings, **kwargs):
        con = connect(settings.db_path)
        con.execute("CREATE TABLE IF NOT EXISTS curated.alpha AS SELECT 1 AS id")
        con.close()
        report = StageReport("alpha")
        report.add("new", 1)
        return report

    def builder_stopped_part_way(settings, **options):      # a builder double, run as builders run
        with run_session(settings, "build", "casefacts") as session:
            session.report.add("claims_generated", 3)
            raise KeyboardInterrupt                          # Ctrl-C during its LLM step

    settings = load_settings(tmp_path / "cf.duckdb")
    with pytest.raises(KeyboardInterrupt):
        nightly_runner.run_nightly(settings, None, sources={"alpha": SourceDouble("alpha", "", None, refresh=source_double)},
                            builders={"casefacts": BuilderDouble("casefacts", "", None, inputs=("curated.alpha",),
                                                                 nightly=True, builder=builder_stopped_part_way)},
                            evaluations={}, plots={},
                            releases={"casefacts": ReleaseDouble("casefacts", "", None, inputs=("curated.alpha",),
                                                                 writer=lambda con, folder: None)})
    con = connect(settings.db_path)
    try:
        runs = dict(con.execute("SELECT kind, status FROM ops.runs").fetchall())
        stages = {f"{s} {n}": (status, message) for s, n, status, message in con.execute(
            "SELECT stage, name, status, message FROM ops.nightly_stages").fetchall()}
    finally:
        con.close()
    assert runs == {"nightly": "interrupted", "build": "interrupted"}
    assert stages["source alpha"][0] == "succeeded"
    assert stages["builder casefacts"] == ("interrupted", "interrupted by SIGINT (Ctrl-C) while it ran")
    assert stages["export casefacts"] == ("interrupted", "not started: interrupted by SIGINT (Ctrl-C)")
