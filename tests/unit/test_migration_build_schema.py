"""Migration 100: a warehouse made before it keeps every CaseFacts row, with the stage tables moved to build."""

import duckdb
import pytest

from caseforge.warehouse.connection import connect
from caseforge.warehouse.mirror import export_curated_parquet
from caseforge.warehouse.statements import curated_tables
from migration_support import connect_before

MIGRATION = 100
STAGE_TABLES = ("generated", "factuality", "same_case_pairs", "kept_claims", "embeddings", "calibration_samples",
                "windows", "cross_pairs", "overrulings", "merges", "negations")
# Two distinct values per column type the stage tables use.
VALUES = {"VARCHAR": ("'a'", "'b'"), "BIGINT": ("1", "2"), "INTEGER": ("3", "4"), "BOOLEAN": ("true", "NULL"),
          "DOUBLE": ("0.25", "0.5"), "DATE": ("DATE '1954-05-17'", "NULL"), "JSON": ("'[1, 2]'", "'{\"k\": 3}'"),
          "FLOAT[]": ("[0.5, 0.25]::FLOAT[]", "[]::FLOAT[]")}


@pytest.fixture
def old_warehouse(db_path, tmp_path, monkeypatch):
    """A warehouse at the level before migration 100, with two rows in every CaseFacts table."""
    con = connect_before(MIGRATION, db_path, tmp_path, monkeypatch)
    before = {}
    for table in STAGE_TABLES:
        columns = con.execute(
            "SELECT data_type FROM information_schema.columns WHERE table_schema = 'curated' AND table_name = ? "
            "ORDER BY ordinal_position", [f"casefacts_{table}"]).fetchall()
        assert columns, table
        for row in (0, 1):
            literals = ", ".join(VALUES[data_type][row] for (data_type,) in columns)
            con.execute(f"INSERT INTO curated.casefacts_{table} VALUES ({literals})")
        before[table] = con.execute(f"SELECT * FROM curated.casefacts_{table} ORDER BY ALL").fetchall()
    con.execute("INSERT INTO curated.casefacts_claims VALUES ('c1', 'f:c1', 'A claim.', 'SUPPORTED', '[1]', '[]', "
                "'train')")
    before["claims"] = con.execute("SELECT * FROM curated.casefacts_claims").fetchall()
    con.close()
    return db_path, before


def test_an_earlier_warehouse_migrates_and_keeps_its_rows(old_warehouse, tmp_path):
    db_path, before = old_warehouse
    con = connect(db_path)                       # every migration now, 100 among them
    assert MIGRATION in {n for (n,) in con.execute("SELECT number FROM ops.migrations").fetchall()}
    for table in STAGE_TABLES:
        assert con.execute(f"SELECT * FROM build.casefacts_{table} ORDER BY ALL").fetchall() == before[table], table
    assert con.execute("SELECT * FROM curated.casefacts_claims").fetchall() == before["claims"]

    # curated keeps the deliverable (with its primary key) and no stage table
    assert [t for t in curated_tables(con) if t.startswith("casefacts")] == ["casefacts_claims"]
    with pytest.raises(duckdb.ConstraintException):
        con.execute("INSERT INTO curated.casefacts_claims VALUES ('c1', 'f', 'x', 'REFUTED', '[]', '[]', 'test')")
    # and no view standing in for one (migration 111 dropped the one 100 left for the old export)
    assert con.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'curated' "
                       "AND table_name LIKE 'casefacts_%'").fetchone()[0] == 1

    # the Parquet mirror holds curated only; a stage table mirrored before the move leaves it
    mirror = tmp_path / "parquet"
    mirror.mkdir()
    (mirror / "casefacts_generated.parquet").write_bytes(b"stale")
    written = {p.stem for p in export_curated_parquet(con, mirror)}
    assert {p.stem for p in mirror.glob("*.parquet")} == written == set(curated_tables(con))
    con.close()


def test_a_new_warehouse_has_the_stage_tables_in_build(db_path):
    con = connect(db_path)
    build = {r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'build'").fetchall()}
    assert build == {f"casefacts_{t}" for t in STAGE_TABLES}
    con.close()
