"""Ordinary mistakes get one clear line on stderr and a non-zero exit, not a Python traceback; `--debug`
adds the traceback; the exit status of an error is 2 (1 is a run that failed or quarantined data).
`caseforge sql` runs exactly one statement per call. `export --out DIR` writes DIR."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from caseforge.cli import main
from caseforge.warehouse import connect


@pytest.fixture
def warehouse(tmp_path):
    db = tmp_path / "cf.duckdb"
    con = connect(db)
    con.execute("INSERT INTO curated.scotus_legacy (case_id, name, raw_sha256) VALUES (1, 'A v. B', 'x')")
    con.execute("INSERT INTO curated.scotus_cases (case_id, name, term, decided_date, raw_sha256, updated_at) "
                "VALUES (50606, 'Roe v. Wade', '1971', DATE '1973-01-22', 'ab', now())")
    con.close()
    return db


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("caseforge: "), err
    assert "Traceback" not in err
    return lines[0]


def test_a_wrong_column_is_one_line_without_traceback(warehouse, capsys):
    code = main(["sql", "SELECT nme FROM curated.scotus_legacy", "--db", str(warehouse)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    line = one_line(err)
    assert 'Referenced column "nme" not found' in line and '"name"' in line      # DuckDB's candidate kept


def test_a_syntax_error_is_one_line(warehouse, capsys):
    assert main(["sql", "SELEC 1", "--db", str(warehouse)]) == 2
    assert "syntax error" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("query", ["", "   ", " ; ;", "-- only a comment"])
def test_an_empty_query_is_refused_with_one_line(warehouse, capsys, query):
    assert main(["sql", query, "--db", str(warehouse)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "empty query" in one_line(err)


def test_several_statements_in_one_call_run_none(warehouse, capsys):
    code = main(["sql", "SELECT 'first' AS a; SELECT 'second' AS b", "--db", str(warehouse)])
    out, err = capsys.readouterr()
    assert code == 2
    assert "first" not in out and "second" not in out
    assert "2 statements" in one_line(err)


def test_one_statement_with_a_trailing_semicolon_runs(warehouse, capsys):
    assert main(["sql", "SELECT name FROM curated.scotus_legacy;", "--format", "csv", "--db", str(warehouse)]) == 0
    assert capsys.readouterr().out.splitlines() == ["name", "A v. B"]


def test_debug_adds_the_traceback(warehouse, capsys):
    for argv in (["--debug", "sql", "SELECT nme FROM curated.scotus_legacy", "--db", str(warehouse)],
                 ["sql", "SELECT nme FROM curated.scotus_legacy", "--db", str(warehouse), "--debug"]):
        assert main(argv) != 0
        err = capsys.readouterr().err
        assert "Traceback (most recent call last)" in err and "BinderException" in err
        assert err.rstrip().splitlines()[-1].startswith("caseforge: ")


def test_a_missing_warehouse_is_one_line(tmp_path, capsys):
    assert main(["quality", "--db", str(tmp_path / "none.duckdb")]) == 2
    assert "no warehouse at" in one_line(capsys.readouterr().err)


def test_export_writes_the_folder_it_is_given(warehouse, tmp_path, capsys):
    out = tmp_path / "rel" / "scotus"
    assert main(["export", "scotus", "--out", str(out), "--db", str(warehouse)]) == 0
    assert (out / "README.md").is_file() and (out / "MANIFEST.sha256").is_file()
    assert (out / "data" / "scotus_cases.parquet").is_file()
    assert not (out / "scotus").exists()
    assert sorted(p.name for p in out.parent.iterdir()) == ["scotus"]
    assert str(out) in capsys.readouterr().out


def _read_only_command(folder, argv):
    """argv run with `folder` on a read-only mount (root: a private mount namespace; others: chmod)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return argv
    if not shutil.which("unshare"):
        pytest.skip("needs unshare to make a read-only mount as root")
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {folder} {folder} && "
                            f"mount -o remount,bind,ro {folder}"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a private read-only mount here: {probe.stderr.decode()[:200]}")
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, "sh", str(folder), *argv]


def test_export_to_a_read_only_disk_is_one_line(warehouse, tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    argv = _read_only_command(disk, [sys.executable, "-m", "caseforge", "export", "scotus",
                                     "--out", str(disk / "scotus"), "--db", str(warehouse)])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert str(disk / "scotus") in line and ("Read-only file system" in line or "Permission denied" in line), line
    assert not (disk / "scotus").exists()
