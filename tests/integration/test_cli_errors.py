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
from caseforge.warehouse.connection import connect


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


# --- what a person sees (issue 26): ordinary errors are one line, never "crashed"; typos get a did-you-mean ---

def test_an_unknown_quality_table_exits_2_with_a_did_you_mean(warehouse, capsys):
    assert main(["quality", "scotus_case", "--db", str(warehouse)]) == 2
    out, err = capsys.readouterr()
    line = one_line(err)
    assert out == "" and "scotus_case" in line and "did you mean scotus_cases?" in line, line


def test_quality_takes_a_table_named_with_its_schema(warehouse, capsys):
    con = connect(warehouse)
    con.execute("INSERT INTO ops.quality_results (run_id, table_name, suite, validated_at, success, rows_checked, "
                "rows_failed, batch_rejected) VALUES (1, 'scotus_cases', 'scotus_cases', now(), true, 1, 0, false)")
    con.close()
    assert main(["quality", "curated.scotus_cases", "--format", "csv", "--db", str(warehouse)]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 2 and rows[1].startswith("scotus_cases,"), rows


def test_an_unknown_llm_step_exits_2_with_a_did_you_mean(warehouse, capsys):
    assert main(["llm", "stats", "--step", "casefacts.factualty", "--db", str(warehouse)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "did you mean casefacts.factuality?" in one_line(err)


def test_llm_models_shows_only_the_role_asked_for(capsys):
    assert main(["llm", "models", "--role", "judge"]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = lines[2:next(n for n, line in enumerate(lines) if line.endswith(" rows)"))]    # the first table's rows
    roles = {line.split(" | ")[1].strip() for line in table}
    assert roles == {"judge"}, table


@pytest.mark.parametrize("argv, suggestion", [
    (["sql", "SELECT 1", "--format", "jsn"], "did you mean json?"),
    (["ingest", "oyz"], "did you mean oyez?"),
    (["llm", "models", "--role", "jduge"], "did you mean judge?"),
])
def test_an_invalid_choice_is_one_line_with_a_did_you_mean(capsys, argv, suggestion):
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert suggestion in one_line(capsys.readouterr().err)


def test_a_broken_pipe_ends_quietly(warehouse):
    con = connect(warehouse)
    con.execute("INSERT INTO ops.runs (kind, target, started_at, status) "
                "SELECT 'ingest', 'oyez', now(), 'succeeded' FROM range(50)")
    con.close()
    status = subprocess.Popen([sys.executable, "-m", "caseforge", "status", "--format", "json", "--limit", "50",
                               "--db", str(warehouse)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    status.stdout.close()                    # `| head` that has read enough before the command writes
    err = status.stderr.read().decode()
    status.wait(timeout=120)
    assert err == "" and status.returncode != 0, err


def reasons(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("caseforge: ")]


def test_a_missing_file_given_to_a_flow_is_one_ordinary_line(warehouse, tmp_path, capfd):
    """Not "casefacts-eval crashed: FileNotFoundError: ...", and no Prefect record repeating it on the terminal."""
    missing = tmp_path / "nofile.json"
    code = main(["eval", "casefacts", "--claims", str(missing), "--system", "bm25", "--db", str(warehouse)])
    err = capfd.readouterr().err
    assert code == 2, err
    [line] = reasons(err)
    assert "crashed" not in line and "FileNotFoundError" not in line and str(missing) in line, line
    assert "nofile.json" not in err.replace(line, ""), err          # said once, not in Prefect's records too


def test_a_busy_warehouse_is_an_ordinary_line_naming_the_holder(warehouse, tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("CASEFORGE_BUSY_WAIT_S", "0.5")
    (tmp_path / "barexam").mkdir()
    (tmp_path / "barexam" / "passages_x.jsonl").write_text('{"idx": "p1", "source": "mbe", "text": "t"}\n')
    code = "import duckdb, sys; con = duckdb.connect(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"
    holder = subprocess.Popen([sys.executable, "-c", code, str(warehouse)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        status = main(["ingest", "barexam", "--from-dir", str(tmp_path / "barexam"), "--db", str(warehouse)])
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    err = capfd.readouterr().err
    assert status == 2, err
    [line] = reasons(err)
    assert "crashed" not in line and f"PID {holder.pid}" in line and "busy" in line, line


def test_a_program_error_still_says_crashed(warehouse, tmp_path, capfd, monkeypatch):
    """The other side of the line: a bug (here a TypeError from inside the import) is a crash, named so."""
    from caseforge.tasks.barexam import ingest

    def broken(*args, **kwargs):
        raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")

    monkeypatch.setattr(ingest, "import_folder", broken)
    (tmp_path / "barexam").mkdir()
    code = main(["ingest", "barexam", "--from-dir", str(tmp_path / "barexam"), "--db", str(warehouse)])
    err = capfd.readouterr().err
    assert code != 0
    [line] = reasons(err)
    assert "crashed" in line and "TypeError" in line and "--debug" in line, line


def test_an_unknown_nightly_source_exits_2_with_a_did_you_mean(capsys):
    assert main(["run", "nightly", "--sources", "oyz,hudoc"]) == 2
    assert "did you mean oyez?" in one_line(capsys.readouterr().err)
