"""A full disk said in one line (caseforge/disk_full.py) whichever library met it, and a run whose Parquet mirror the
disk had no room for recorded failed though its end was already written (caseforge.session.end_and_mirror). The
real full disks, one per stage, are tests/integration/test_disk_full_stages.py; these use doubles of the failing
write, in this process."""
from __future__ import annotations

import errno

import duckdb
import pytest

from caseforge.disk_full import DiskFull, disk_full_line, disk_full_of, filesystem_of
from caseforge.flows.states import FlowCrashed


def test_each_library_s_full_disk_is_read_with_the_file_it_was_writing(tmp_path):
    wal = tmp_path / "cf.duckdb.wal"
    duck = duckdb.IOException(f'TransactionContext Error: Failed to commit: Could not write file "{wal}": No space '
                              'left on device')
    assert disk_full_of(duck) == ("no space left", wal)
    assert disk_full_of(OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "a"))) == \
        ("no space left", tmp_path / "a")
    assert disk_full_of(OSError(errno.EFBIG, "File too large")) == ("file size limit reached", None)
    invalidated = duckdb.FatalException('database has been invalidated because of a previous fatal error. Original '
                                        f'error: "Could not write file "{wal}": No space left on device"')
    assert disk_full_of(invalidated)[0] == "no space left"
    assert disk_full_of(RuntimeError("the judge answered nothing")) is None
    wrapped = RuntimeError("the stage failed")
    wrapped.__cause__ = OSError(errno.ENOSPC, "No space left on device")
    assert disk_full_of(wrapped) == ("no space left", None)


def test_the_line_names_the_stage_the_disk_its_free_space_and_what_was_written(tmp_path):
    mount, free = filesystem_of(tmp_path)
    assert tmp_path.is_relative_to(mount) and free > 0
    line = disk_full_line(OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "cf-archive" / "ab" / "x")),
                          "source hudoc")
    assert line.startswith(f"source hudoc: the disk is full (no space left on {mount}, ")
    assert line.endswith(f"free) writing the archive ({tmp_path / 'cf-archive' / 'ab' / 'x'})")
    assert disk_full_line(OSError(errno.ENOSPC, "No space left on device"), "eval casegen", tmp_path / "cf.duckdb") \
        .startswith(f"eval casegen: the disk is full (no space left on {mount}, ")
    assert disk_full_line(ValueError("not a disk"), "x") is None


def test_a_line_already_said_travels_unchanged_through_flows_and_stages():
    line = "ingest hudoc: the Parquet mirror: the disk is full (no space left on /d, 0 bytes free)"
    assert disk_full_line(DiskFull(line), "source hudoc") == line
    assert disk_full_line(FlowCrashed(f"DiskFull: {line}", DiskFull(line)), "source hudoc") == line
    assert disk_full_line(RuntimeError(f"FlowCrashed: DiskFull: {line}"), "nightly") == line


def test_a_mirror_the_disk_has_no_room_for_fails_the_run_after_its_end_was_written(db_path, monkeypatch):
    """The run ended succeeded; its mirror then meets a full disk (a double of the write): the run is recorded
    failed with the line, DiskFull raised, and when the warehouse cannot take that either the open-run file keeps
    it: `status` shows it, and the next start writes it."""
    from caseforge import session as session_module
    from caseforge.cli.status import status_data
    from caseforge.run_record import finish_run, start_run
    from caseforge.stage_report import StageReport
    from caseforge.settings import load_settings
    from caseforge.warehouse.connection import connect

    settings = load_settings(db_path)

    def mirror_on_a_full_disk(con, out_dir):          # test double of the mirror's write on a full disk
        raise duckdb.IOException(f'Could not write file "{out_dir}.d/.tmp/a.parquet": No space left on device')

    monkeypatch.setattr(session_module, "export_curated_parquet", mirror_on_a_full_disk)
    with pytest.raises(DiskFull) as raised:
        with session_module.run_session(settings, "ingest", "oyez") as session:
            session.report.add("new", 1)
    assert str(raised.value).startswith("ingest oyez: the Parquet mirror: the disk is full (no space left on /")
    con = connect(db_path)
    try:
        status, message = con.execute("SELECT status, message FROM ops.runs WHERE run_id = ?",
                                      [session.run_id]).fetchone()
    finally:
        con.close()
    assert (status, message) == ("failed", str(raised.value))

    # the warehouse cannot take the amendment either: the open-run file keeps it
    from caseforge import run_record

    writes = run_record.finish_run
    failing_once = []

    def finish_then_full(con, run_id, report, stages=(), keep_open_file=False):
        if report.failures:                              # the amendment meets the full disk (a double of it)
            failing_once.append(run_id)
            raise duckdb.IOException('Could not write file "cf.duckdb.wal": No space left on device')
        return writes(con, run_id, report, stages, keep_open_file)

    monkeypatch.setattr(run_record, "finish_run", finish_then_full)
    with pytest.raises(DiskFull):
        with session_module.run_session(settings, "ingest", "hudoc") as second:
            second.report.add("new", 1)
    monkeypatch.setattr(run_record, "finish_run", writes)
    assert failing_once
    con = connect(db_path)
    try:
        assert con.execute("SELECT status FROM ops.runs WHERE run_id = ?", [second.run_id]).fetchone()[0] == \
            "succeeded"                                   # the first end, as the warehouse holds it
        shown = {r["run_id"]: r for r in status_data(con, 5, db_path)["runs"]}
        assert shown[second.run_id]["status"] == "failed"   # status shows the amended end from the file
        following = start_run(con, "ingest", "next")       # the next start records it
        status, message = con.execute("SELECT status, message FROM ops.runs WHERE run_id = ?",
                                      [second.run_id]).fetchone()
        finish_run(con, following, StageReport("next"))
    finally:
        con.close()
    assert status == "failed" and message.startswith("ingest hudoc: the Parquet mirror: the disk is full")


def test_a_source_that_meets_a_full_disk_stops_the_nightly_in_one_line_and_the_others_keep_their_outcome(tmp_path):
    """One source's write meets a full disk (a double of it), another source finishes: the night stops once both
    have ended, recorded failed with the line; the other source's stage keeps `succeeded`, the stages after it
    say they were not started, and why."""
    from caseforge.flows import nightly_runner
    from caseforge.settings import load_settings
    from caseforge.stage_report import StageReport
    from caseforge.warehouse.connection import connect

    from registry_doubles import BuilderDouble, SourceDouble

    def full(settings, **kwargs):                    # test double of a source whose archive write met a full disk
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "cf-archive" / "ab" / "abc"))

    def fine(settings, **kwargs):
        return StageReport("fine", counts={"new": 0})

    settings = load_settings(tmp_path / "cf.duckdb")
    sources = {"full": SourceDouble("full", "", None, archive_source="full", refresh=full),
               "fine": SourceDouble("fine", "", None, archive_source="fine", refresh=fine)}
    builders = {"after": BuilderDouble("after", "", None, inputs=("curated.x",), nightly=True, builder=fine)}
    with pytest.raises(DiskFull) as raised:
        nightly_runner.run_nightly(settings, sources=sources, builders=builders, evaluations={}, releases={}, plots={})
    line = str(raised.value)
    assert line.startswith("source full: the disk is full (no space left on /") and "writing the archive (" in line
    con = connect(settings.db_path)
    try:
        status, message = con.execute("SELECT status, message FROM ops.runs WHERE kind = 'nightly'").fetchone()
        stages = {(s, n): (st, m) for s, n, st, m in con.execute(
            "SELECT stage, name, status, message FROM ops.nightly_stages").fetchall()}
    finally:
        con.close()
    assert (status, message) == ("failed", line)
    assert stages[("source", "fine")][0] == "succeeded"
    assert stages[("source", "full")] == ("failed", f"{line} while it ran")
    assert stages[("builder", "after")] == ("failed", f"not started: {line}")
