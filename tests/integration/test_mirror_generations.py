"""The Parquet mirror is replaced as one consistent set and rewrites only what changed.

- A mirror write killed midway (SIGKILL) leaves readers the previous set whole: never new files of one table
  beside old files of another under the old MIRROR.json (issue 26's measured defect).
- Its staging debris (named `.*.tmp`) is removed by the next process's mirror write.
- Unchanged tables are not written again (their files are the same inodes); a table with a stamp column gets a
  new part holding the new rows instead of a rewrite of all of them."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from caseforge.run_record import finish_run, start_run
from caseforge.settings import load_settings
from caseforge.stage_report import StageReport
from caseforge.warehouse.connection import connect
from caseforge.warehouse.mirror import export_curated_parquet, find_mirror
from caseforge.warehouse.query import open_mirror

KILL_AFTER_COPY_OF = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from caseforge.warehouse import mirror
    from caseforge.warehouse.connection import connect

    real_run_sql = mirror.run_sql
    def run_sql(con, relative, params=None, identifiers=None):
        result = real_run_sql(con, relative, params, identifiers)
        if "parquet" in relative and (identifiers or {{}}).get("table") == {table!r}:
            os.kill(os.getpid(), signal.SIGKILL)          # killed right after this table's file was written
        return result
    mirror.run_sql = run_sql
    con = connect(Path(sys.argv[1]))
    mirror.export_curated_parquet(con, Path(sys.argv[2]))
""")

EXPORT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from caseforge.warehouse.connection import connect
    from caseforge.warehouse.mirror import export_curated_parquet
    con = connect(Path(sys.argv[1]))
    export_curated_parquet(con, Path(sys.argv[2]))
    con.close()
""")


def _python(code: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=120)


def _fill(con, version: str, paragraphs: int = 3) -> None:
    """One row in a table mirrored whole before and after curated.echr_paragraphs, and paragraphs of one
    judgment (a table with a stamp column), all saying `version`."""
    con.execute("INSERT OR REPLACE INTO curated.barexam_passages VALUES ('p1', 'mbe', ?, 'sha')", [version])
    con.execute("INSERT OR REPLACE INTO curated.scotus_legacy (case_id, name, raw_sha256) VALUES (1, ?, 'x')",
                [version])
    con.execute("DELETE FROM curated.echr_paragraphs WHERE itemid = '001-1'")
    con.execute("INSERT INTO curated.echr_paragraphs (itemid, part, text, ordinal, raw_sha256, updated_at) "
                "SELECT '001-1', 'judgment', ?, i, 'sha', now() FROM range(?) t(i)", [version, paragraphs])


_VIEWS_ROOT: list[Path] = []


@pytest.fixture(autouse=True)
def _views_root(tmp_path_factory):
    """open_mirror's throwaway views files go under pytest's own temporary folder, not the machine's /tmp."""
    _VIEWS_ROOT[:] = [tmp_path_factory.mktemp("views")]


def _views_folder() -> Path:
    return Path(tempfile.mkdtemp(dir=_VIEWS_ROOT[0]))


def _read(parquet_dir: Path, db: Path) -> tuple:
    con = open_mirror(find_mirror(db, parquet_dir), _views_folder())
    try:
        return (con.execute("SELECT text FROM curated.barexam_passages").fetchall(),
                con.execute("SELECT name FROM curated.scotus_legacy").fetchall(),
                con.execute("SELECT DISTINCT text FROM curated.echr_paragraphs").fetchall())
    finally:
        con.close()


def _tree(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")} if folder.exists() else set()


def test_a_mirror_write_killed_midway_leaves_the_previous_set_whole_and_its_debris_goes_next_time(tmp_path):
    settings = load_settings(tmp_path / "cf.duckdb")
    con = connect(settings.db_path)
    _fill(con, "old")
    export_curated_parquet(con, settings.parquet_dir)
    _fill(con, "new")
    con.close()
    before = _tree(tmp_path)

    killed = _python(KILL_AFTER_COPY_OF.format(table="curated.echr_paragraphs"), settings.db_path, settings.parquet_dir)
    assert killed.returncode == -9, killed.stderr

    # every table from one write: the old one, as the manifest readers find says
    assert _read(settings.parquet_dir, settings.db_path) == ([("old",)], [("old",)], [("old",)])
    debris = _tree(tmp_path) - before
    assert debris, "the killed write left nothing behind: the test did not kill it mid-write"
    outermost = {p for p in debris if p.parent not in debris}
    assert all(p.name.startswith(".") and p.name.endswith(".tmp") for p in outermost), sorted(outermost)

    done = _python(EXPORT, settings.db_path, settings.parquet_dir)       # a later process
    assert done.returncode == 0, done.stderr
    assert not [p for p in _tree(tmp_path) if p.name.endswith(".tmp")], sorted(_tree(tmp_path))
    assert _read(settings.parquet_dir, settings.db_path) == ([("new",)], [("new",)], [("new",)])


def _files_of(parquet_dir: Path, db: Path) -> dict[str, dict[Path, int]]:
    """schema.table -> {file: inode} of the mirror's current set."""
    mirror = find_mirror(db, parquet_dir)
    return {name: {Path(p).name: os.stat(p).st_ino for p in _paths(files)} for name, files in mirror.files.items()}


def _paths(files) -> list:
    return list(files) if isinstance(files, (list, tuple)) else [files]


def test_only_what_changed_is_written_again(tmp_path):
    settings = load_settings(tmp_path / "cf.duckdb")
    con = connect(settings.db_path)
    _fill(con, "v1", paragraphs=50)
    run_id = start_run(con, "ingest", "test")
    finish_run(con, run_id, StageReport(name="test"))
    export_curated_parquet(con, settings.parquet_dir)
    first = _files_of(settings.parquet_dir, settings.db_path)

    # a run that changes one whole-table table and adds one judgment's paragraphs to the stamped table
    con.execute("UPDATE curated.barexam_passages SET text = 'v2'")
    con.execute("INSERT INTO curated.echr_paragraphs (itemid, part, text, ordinal, raw_sha256, updated_at) "
                "SELECT '001-2', 'judgment', 'v2', i, 'sha', now() FROM range(5) t(i)")
    export_curated_parquet(con, settings.parquet_dir)
    second = _files_of(settings.parquet_dir, settings.db_path)

    assert second["curated.scotus_legacy"] == first["curated.scotus_legacy"]         # untouched: same file
    assert second["curated.barexam_passages"] != first["curated.barexam_passages"]   # changed: written again
    old_parts, new_parts = first["curated.echr_paragraphs"], second["curated.echr_paragraphs"]
    assert set(old_parts.items()) < set(new_parts.items()), (old_parts, new_parts)   # old part kept, one added
    assert len(new_parts) == len(old_parts) + 1

    mirror = open_mirror(find_mirror(settings.db_path, settings.parquet_dir), _views_folder())
    assert mirror.execute("SELECT itemid, count(*) FROM curated.echr_paragraphs GROUP BY ALL ORDER BY 1").fetchall() \
        == [("001-1", 50), ("001-2", 5)]
    assert mirror.execute("SELECT text FROM curated.barexam_passages").fetchall() == [("v2",)]
    mirror.close()

    # a changed row in an old part rewrites that part, and nothing is lost or doubled
    con.execute("UPDATE curated.echr_paragraphs SET text = 'v3', updated_at = now() WHERE itemid = '001-1' "
                "AND ordinal = 0")
    export_curated_parquet(con, settings.parquet_dir)
    third = _files_of(settings.parquet_dir, settings.db_path)
    assert third["curated.barexam_passages"] == second["curated.barexam_passages"]
    mirror = open_mirror(find_mirror(settings.db_path, settings.parquet_dir), _views_folder())
    assert mirror.execute("SELECT itemid, text, count(*) FROM curated.echr_paragraphs GROUP BY ALL ORDER BY 1, 2"
                          ).fetchall() == [("001-1", "v1", 49), ("001-1", "v3", 1), ("001-2", "v2", 5)]
    mirror.close()
    con.close()


def _statements(path: Path) -> list[str]:
    text = "\n".join(line.split("--", 1)[0] for line in path.read_text(encoding="utf-8").splitlines())
    return [s.strip() for s in text.split(";") if s.strip()]


def test_every_write_to_a_table_mirrored_in_parts_moves_its_stamp(tmp_path):
    """The mirror finds changed rows of a table with `updated_at` by (key, updated_at) alone, so every statement
    in sql/ that inserts or updates such a table sets it; the append-only ops tables are never updated."""
    from caseforge.settings import SQL_DIR
    from caseforge.warehouse.mirror import APPEND_ONLY_STAMPS, MIRROR_STAMP_COLUMN

    con = connect(tmp_path / "cf.duckdb")
    stamped = {f"{s}.{t}" for s, t in con.execute(
        "SELECT table_schema, table_name FROM information_schema.columns WHERE column_name = ?",
        [MIRROR_STAMP_COLUMN]).fetchall()}
    con.close()
    assert {"curated.echr_paragraphs", "curated.cn_judgments", "curated.scotus_cases"} <= stamped
    problems = []
    for path in sorted(SQL_DIR.rglob("*.sql")):
        for statement in _statements(path):
            words = statement.lower().split()
            verb = words[0] if words else ""
            if verb in ("update", "insert"):
                target = words[1] if verb == "update" else words[words.index("into") + 1]
                if target in APPEND_ONLY_STAMPS and verb == "update":
                    problems.append(f"{path.relative_to(SQL_DIR)}: updates append-only {target}")
                if target in stamped and MIRROR_STAMP_COLUMN not in statement and "now()" not in statement.lower():
                    problems.append(f"{path.relative_to(SQL_DIR)}: {verb} {target} without {MIRROR_STAMP_COLUMN}")
            elif verb == "delete" and len(words) > 2 and words[2] in APPEND_ONLY_STAMPS:
                problems.append(f"{path.relative_to(SQL_DIR)}: deletes from append-only {words[2]}")
    assert not problems, problems


def test_a_curated_table_the_journal_says_is_unchanged_is_not_read_again(tmp_path, monkeypatch):
    """Issue 43: a curated table whose state (the write journal, its columns, DuckDB's storage facts) is the one
    recorded with the previous generation keeps its files without a row of it being read; one that changed, by a
    curate statement or by hand, is read (its parts checked) and its change mirrored."""
    from caseforge.warehouse import mirror as mirror_module

    settings = load_settings(tmp_path / "cf.duckdb")
    con = connect(settings.db_path)
    _fill(con, "v1", paragraphs=50)
    export_curated_parquet(con, settings.parquet_dir)
    first = _files_of(settings.parquet_dir, settings.db_path)
    read = []
    real_run_sql = mirror_module.run_sql

    def seen(con, relative, params=None, identifiers=None):          # records what the mirror reads
        if relative in ("ops/mirror_part_fingerprints.sql", "ops/table_fingerprint.sql"):
            read.append((identifiers or {}).get("table"))
        return real_run_sql(con, relative, params, identifiers)

    monkeypatch.setattr(mirror_module, "run_sql", seen)
    export_curated_parquet(con, settings.parquet_dir)
    assert [t for t in read if t.startswith("curated.")] == []
    assert _files_of(settings.parquet_dir, settings.db_path) == first

    con.execute("UPDATE curated.echr_paragraphs SET text = 'by hand', updated_at = now() WHERE ordinal = 3")
    read.clear()
    export_curated_parquet(con, settings.parquet_dir)
    assert [t for t in read if t.startswith("curated.")] == ["curated.echr_paragraphs"]
    mirror = open_mirror(find_mirror(settings.db_path, settings.parquet_dir), _views_folder())
    assert mirror.execute("SELECT text FROM curated.echr_paragraphs WHERE ordinal = 3").fetchall() == [("by hand",)]
    mirror.close()
    con.close()
