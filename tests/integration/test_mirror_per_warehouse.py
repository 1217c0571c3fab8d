"""Every warehouse has its own Parquet mirror, run folders and releases (two warehouses in one folder
never overwrite each other), and `caseforge sql` / `status` / `quality` answering from the mirror while
a run holds the file say so, say how old it is, and answer only from that warehouse's own mirror."""
from __future__ import annotations

import json

import pytest
from warehouse_holder import held_by_another_process

from caseforge.cli import main
from caseforge.run_record import finish_run, start_run
from caseforge.settings import load_settings
from caseforge.stage_report import StageReport
from caseforge.warehouse.connection import connect
from caseforge.warehouse.errors import WarehouseBusy
from caseforge.warehouse.mirror import export_curated_parquet
from caseforge.warehouse.query import open_for_query


def make_warehouse(db, name: str):
    """A warehouse with one curated row, one finished run and one gate result, mirrored as a run leaves it."""
    settings = load_settings(db)
    con = connect(db)
    con.execute("INSERT INTO curated.scotus_legacy (case_id, name, raw_sha256) VALUES (1, ?, 'x')", [name])
    run_id = start_run(con, "ingest", name)
    finish_run(con, run_id, StageReport(name=name, counts={"new": 1}))
    con.execute("INSERT INTO ops.quality_results (run_id, table_name, suite, validated_at, success, rows_checked, "
                "rows_failed, batch_rejected) VALUES (?, 'scotus_legacy', 'scotus_legacy', now(), true, 1, 0, false)",
                [run_id])
    export_curated_parquet(con, settings.parquet_dir)
    con.close()
    return settings


def test_two_warehouses_in_one_folder_have_their_own_mirror_run_folders_and_releases(tmp_path):
    a, b = load_settings(tmp_path / "a.duckdb"), load_settings(tmp_path / "b.duckdb")
    for attribute in ("parquet_dir", "runs_dir", "release_dir"):
        mine, theirs = getattr(a, attribute), getattr(b, attribute)
        assert mine != theirs, attribute
        assert mine.parent == tmp_path and "a" in mine.name, (attribute, mine)
    assert load_settings(tmp_path / "caseforge.duckdb").parquet_dir == tmp_path / "caseforge-parquet"


def test_a_busy_warehouse_never_answers_from_another_warehouses_mirror(tmp_path):
    a = make_warehouse(tmp_path / "a.duckdb", "from a")
    b = make_warehouse(tmp_path / "b.duckdb", "from b")       # mirrored after a, in the same folder
    with held_by_another_process(a.db_path):
        con, mode = open_for_query(a.db_path, a.parquet_dir)
        try:
            assert mode == "parquet"
            assert con.execute("SELECT name FROM curated.scotus_legacy").fetchall() == [("from a",)]
        finally:
            con.close()
        # a mirror folder written from another database is refused, whatever folder it is given as
        with pytest.raises(WarehouseBusy, match="belongs to"):
            open_for_query(a.db_path, b.parquet_dir)


def test_answering_from_the_mirror_says_so_and_how_old_it_is(tmp_path, capsys):
    a = make_warehouse(tmp_path / "a.duckdb", "from a")
    with held_by_another_process(a.db_path):
        assert main(["sql", "SELECT name FROM curated.scotus_legacy", "--format", "json", "--db", str(a.db_path)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == [{"name": "from a"}]
    assert "Parquet mirror" in err and str(a.parquet_dir) in err
    manifest = json.loads((a.parquet_dir / "MIRROR.json").read_text())
    assert manifest["database"] == str(a.db_path.resolve())
    assert "written " in err and " ago" in err


def test_status_and_quality_answer_from_the_mirror(tmp_path, capsys):
    a = make_warehouse(tmp_path / "a.duckdb", "from a")
    with held_by_another_process(a.db_path):
        assert main(["quality", "--format", "csv", "--db", str(a.db_path)]) == 0
        quality, err = capsys.readouterr()
        assert "scotus_legacy" in quality and "Parquet mirror" in err
        assert main(["status", "--format", "json", "--db", str(a.db_path)]) == 0
        status, err = capsys.readouterr()
    runs = json.loads(status)["runs"]
    assert [(r["kind"], r["target"], r["status"]) for r in runs] == [("ingest", "from a", "succeeded")]
    assert "Parquet mirror" in err


def test_a_table_the_mirror_lacks_fails_with_one_clear_line(tmp_path, capsys):
    a = make_warehouse(tmp_path / "a.duckdb", "from a")
    with held_by_another_process(a.db_path):
        code = main(["sql", "SELECT count(*) FROM ops.llm_calls", "--db", str(a.db_path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = [line for line in err.splitlines() if line.startswith("caseforge: ")]
    assert len(lines) == 1 and "llm_calls" in lines[0] and "Parquet mirror" in lines[0], err
    assert "ops.runs" in lines[0]                # and it says what the mirror does have
    assert "Traceback" not in err
