"""The warehouse knows what it is (issue 26): a corrupt file is named corrupt (exit 2), never "held by another
process", and `sql` / `status` do not answer from the Parquet mirror as if nothing were wrong; a warehouse
migrated by a newer caseforge is refused, to read and to write, before anything is written to it."""
from __future__ import annotations

import os

import duckdb
import pytest

from caseforge.cli import main
from caseforge.processes import started_at
from caseforge.settings import load_settings
from caseforge.warehouse.connection import connect
from caseforge.warehouse.mirror import export_curated_parquet


@pytest.fixture
def warehouse(tmp_path):
    db = tmp_path / "cf.duckdb"
    con = connect(db)
    con.execute("INSERT INTO curated.scotus_legacy (case_id, name, raw_sha256) VALUES (1, 'A v. B', 'x')")
    con.execute("INSERT INTO ops.runs (kind, target, started_at, status) VALUES ('ingest', 'oyez', now(), 'succeeded')")
    export_curated_parquet(con, load_settings(db).parquet_dir)
    con.close()
    return db


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("caseforge: ") and "Traceback" not in err, err
    return lines[0]


def zero_block(db, offset: int = 8192, size: int = 4096) -> None:
    with open(db, "r+b") as handle:
        handle.seek(offset)
        handle.write(b"\0" * size)


@pytest.mark.parametrize("damage", ["zeroed block", "not a database"])
def test_a_corrupt_warehouse_is_named_corrupt_not_busy(warehouse, damage):
    if damage == "zeroed block":
        zero_block(warehouse)
    else:
        warehouse.write_bytes(b"these are my notes, not a database\n" * 200)
    for read_only in (True, False):
        with pytest.raises(Exception) as caught:
            connect(warehouse, read_only=read_only)
        message = str(caught.value)
        assert "corrupt" in message and "held" not in message and "\n" not in message, message
        assert str(warehouse) in message and type(caught.value).__name__ == "WarehouseCorrupt"


@pytest.mark.parametrize("command", [["sql", "SELECT name FROM curated.scotus_legacy"], ["status"], ["quality"]])
def test_sql_and_status_do_not_hide_a_corrupt_warehouse_behind_the_mirror(warehouse, capsys, command):
    zero_block(warehouse)
    assert main([*command, "--db", str(warehouse)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    line = one_line(err)
    assert "corrupt" in line and "held" not in line, line


def test_a_warehouse_made_by_a_newer_caseforge_is_refused_to_read_and_to_write(warehouse, capsys):
    with duckdb.connect(str(warehouse)) as con:
        con.execute("INSERT INTO ops.migrations (number, name) VALUES (999, '999_from_the_future.sql')")
    before = warehouse.read_bytes()
    for read_only in (True, False):
        with pytest.raises(Exception) as caught:
            connect(warehouse, read_only=read_only)
        assert "made by a newer caseforge (migration 999)" in str(caught.value)
        assert type(caught.value).__name__ == "WarehouseTooNew"
    assert warehouse.read_bytes() == before              # the writer wrote nothing before it refused
    assert main(["sql", "SELECT 1", "--db", str(warehouse)]) == 2
    assert "made by a newer caseforge (migration 999)" in one_line(capsys.readouterr().err)


def test_a_new_warehouse_is_made_whole_and_an_in_memory_one_leaves_no_file(tmp_path, monkeypatch):
    """A new warehouse file appears complete (made under a staging name, then linked into place: nothing else is
    left beside it); an empty file left by an older caseforge is replaced; DuckDB's `:memory:` is no file at all
    (the fan-out worker's scratch database: a first version of the staging made a file named ':memory:')."""
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "new" / "cf.duckdb"
    with connect(db) as con:
        assert con.execute("SELECT count(*) FROM ops.migrations").fetchone()[0] > 0
    assert sorted(p.name for p in db.parent.iterdir()) == ["cf.duckdb"]
    empty = tmp_path / "empty.duckdb"
    empty.write_bytes(b"")
    connect(empty).close()
    assert empty.stat().st_size > 0 and sorted(p.name for p in tmp_path.iterdir()) == ["empty.duckdb", "new"]
    with connect(":memory:") as con:
        assert con.execute("SELECT count(*) FROM ops.migrations").fetchone()[0] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.duckdb", "new"]


def test_a_killed_creations_staging_files_are_cleared_when_the_warehouse_is_made(tmp_path):
    """A process killed while it made a new warehouse leaves its staging file (and DuckDB's WAL beside it); the
    next one to make the warehouse removes them. Staging younger than this process (another one's, in progress) and
    files of other names stay."""
    db = tmp_path / "cf.duckdb"
    killed = [tmp_path / ".cf.duckdb.0123456789abcdef0123456789abcdef.tmp",
              tmp_path / ".cf.duckdb.0123456789abcdef0123456789abcdef.tmp.wal"]
    in_progress = tmp_path / ".cf.duckdb.fedcba9876543210fedcba9876543210.tmp"
    other = tmp_path / ".other.duckdb.0123456789abcdef0123456789abcdef.tmp"
    for path in (*killed, in_progress, other):
        path.write_bytes(b"x")
    long_ago = started_at() - 60
    for path in (*killed, other):
        os.utime(path, (long_ago, long_ago))
    connect(db).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["cf.duckdb", in_progress.name, other.name])
