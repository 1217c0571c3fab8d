"""Migrations, the Parquet mirror, and read-only querying while a writer holds the file."""
import os

import duckdb
import pytest

from caseforge.warehouse.connection import connect
from caseforge.warehouse.errors import WarehouseBusy
from caseforge.warehouse.migrations import migration_files
from caseforge.warehouse.mirror import export_curated_parquet
from caseforge.warehouse.query import open_for_query
from caseforge.warehouse.statements import run_sql, sql_text


def test_sql_text_fills_only_checked_identifiers():
    assert "DELETE FROM staging.scotus_cases;" in sql_text("ops/clear_staging_table.sql", table="scotus_cases")
    assert "{table}" in sql_text("ops/clear_staging_table.sql")          # untouched without identifiers
    for bad in ("scotus_cases; DROP TABLE ops.runs", "a b", "'x'", "1x", ""):
        with pytest.raises(ValueError):
            sql_text("ops/clear_staging_table.sql", table=bad)
    with pytest.raises(KeyError):
        sql_text("ops/clear_staging_table.sql", other="scotus_cases")
    # a key of several columns fills comma-separated, each name checked
    counts = sql_text("ops/change_counts.sql", table="guide_paragraphs", key=("guide_id", "para_no"), content="raw_sha256")
    assert "USING (guide_id, para_no)" in counts
    for bad in (("guide_id", "para_no; DROP TABLE ops.runs"), ("guide_id", ""), ()):
        with pytest.raises(ValueError):
            sql_text("ops/change_counts.sql", table="guide_paragraphs", key=bad, content="raw_sha256")


def test_migrations_apply_once_and_are_recorded(db_path):
    con = connect(db_path)
    applied = con.execute("SELECT number FROM ops.migrations ORDER BY number").fetchall()
    assert [n for (n,) in applied] == [n for n, _ in migration_files()]
    con.close()
    con = connect(db_path)                    # second start: nothing to apply, nothing duplicated
    assert con.execute("SELECT count(*) FROM ops.migrations").fetchone()[0] == len(applied)
    schemas = {r[0] for r in con.execute("SELECT schema_name FROM information_schema.schemata").fetchall()}
    assert {"ops", "staging", "build", "curated", "eval"} <= schemas


def test_read_only_connection_refuses_writes(db_path):
    connect(db_path).close()
    con = connect(db_path, read_only=True)
    with pytest.raises(duckdb.Error):
        con.execute("CREATE TABLE curated.x (a INT)")


def test_query_falls_back_to_parquet_while_a_writer_holds_the_file(db_path, tmp_path):
    writer = connect(db_path)
    writer.execute("INSERT INTO curated.scotus_legacy (case_id, name, raw_sha256) VALUES (1, 'A v. B', 'x')")
    export_curated_parquet(writer, tmp_path / "parquet")
    import subprocess
    import sys
    code = (
        "from pathlib import Path; from caseforge.warehouse.query import open_for_query;"
        f"con, mode = open_for_query(Path({str(db_path)!r}), Path({str(tmp_path / 'parquet')!r}));"
        "print(mode, con.execute('SELECT name FROM curated.scotus_legacy').fetchall())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "parquet [('A v. B',)]", out.stderr
    writer.close()
    con, mode = open_for_query(db_path, tmp_path / "parquet")
    assert mode == "warehouse"


def test_busy_without_mirror_is_a_clear_error(db_path, tmp_path):
    import subprocess
    import sys
    writer = connect(db_path)
    code = (
        "from pathlib import Path; from caseforge.warehouse.errors import WarehouseBusy\nfrom caseforge.warehouse.query import open_for_query\n"
        "try:\n"
        f"    open_for_query(Path({str(db_path)!r}), Path({str(tmp_path / 'none')!r}))\n"
        "except WarehouseBusy as exc:\n"
        f"    print('busy:', str(exc).startswith('{db_path} is busy: held by PID {os.getpid()}'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    writer.close()
    assert out.stdout.strip() == "busy: True", out.stderr
    assert WarehouseBusy


def test_threads_can_open_the_same_warehouse_at_once(db_path):
    from concurrent.futures import ThreadPoolExecutor

    connect(db_path).close()

    def open_and_count(_):
        con = connect(db_path)
        try:
            return con.execute("SELECT count(*) FROM ops.migrations").fetchone()[0]
        finally:
            con.close()

    with ThreadPoolExecutor(max_workers=6) as pool:
        counts = list(pool.map(open_and_count, range(24)))
    assert len(set(counts)) == 1 and counts[0] > 0


def test_a_warehouse_killed_right_after_its_migrations_opens_again(tmp_path):
    """DuckDB 1.5.5 could not replay the WAL that migration 113 (ALTER TABLE ops.runs) leaves before a
    checkpoint: a process killed then left a warehouse nothing could open (a fan-out shard's work file
    did, when its worker was killed)."""
    import subprocess
    import sys

    db = tmp_path / "killed.duckdb"
    subprocess.run([sys.executable, "-c", "import os, sys\nfrom caseforge.warehouse.connection import connect\n"
                    "con = connect(sys.argv[1])\nos._exit(9)", str(db)], check=False, timeout=120)   # no close, no checkpoint
    con = connect(db)
    try:
        assert con.execute("SELECT count(*) FROM ops.runs").fetchone() == (0,)
    finally:
        con.close()


def test_change_counts_on_a_key_of_two_columns(db_path):
    """Guide paragraphs are keyed by (guide_id, para_no): paragraph 1 of another guide is new, not changed."""
    con = connect(db_path)
    con.execute("""
    INSERT INTO curated.guide_paragraphs (guide_id, para_no, text, ordinal, raw_sha256, updated_at) VALUES
      ('guide_a', '1', 'x', 1, 'v1', now()), ('guide_a', '2', 'y', 2, 'v1', now());
    INSERT INTO staging.guide_paragraphs (guide_id, para_no, text, ordinal, raw_sha256) VALUES
      ('guide_a', '1', 'x', 1, 'v1'), ('guide_a', '2', 'y2', 2, 'v2'), ('guide_b', '1', 'z', 1, 'w1');
    """)
    counts = run_sql(con, "ops/change_counts.sql", identifiers={"table": "guide_paragraphs", "content": "raw_sha256",
                                                                "key": ("guide_id", "para_no")}).fetchone()
    con.close()
    assert counts == (1, 1, 1)          # new, changed, unchanged
