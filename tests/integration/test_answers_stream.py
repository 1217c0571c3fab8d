"""Answers stream (issue 36): `sql`, `quality` and `llm stats` fetch and write csv and json a batch at a time (json
still one array of row objects, the same text as before), a table shows a bounded number of rows and says how many
more, and what caseforge itself holds does not grow with the answer. The connection is still closed before anything
is printed (the answer is spooled in the query's own folder, within its spill limit)."""
from __future__ import annotations

import contextlib
import csv
import io
import json
import subprocess
import sys
import tracemalloc
from datetime import datetime, timezone

import pytest

from caseforge.cli import main
from caseforge.cli.rows import TABLE_ROWS_SHOWN, print_rows, write_rows
from caseforge.run_record import start_run
from caseforge.warehouse.connection import connect
from caseforge.warehouse.query import size_in_bytes

ROWS = 150_000
WIDE = f"SELECT range AS id, repeat('x', 200) || range AS text, range * 0.5 AS score FROM range({ROWS})"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    db = tmp_path_factory.mktemp("stream") / "cf.duckdb"
    connect(db).close()
    return db


def python_peak_while(argv: list[str], out_path) -> tuple[int, int]:
    """(exit code, peak bytes Python allocated) of `caseforge ARGV`, its stdout in a file (not in memory), after
    the same command on one row (what it imports the first time is not the answer)."""
    with open(out_path, "w", encoding="utf-8") as out, contextlib.redirect_stdout(out):
        assert main([*argv[:1], "SELECT 1 AS warm_up", *argv[2:]]) == 0
        out.seek(0)
        out.truncate()
        tracemalloc.start()
        try:
            code = main(argv)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    return code, peak


@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
def test_a_large_answer_is_not_held_whole(fmt, warehouse, tmp_path):
    out = tmp_path / "out"
    code, peak = python_peak_while(["sql", WIDE, "--format", fmt, "--db", str(warehouse), "--timeout", "0"], out)
    assert code == 0
    answer_bytes = ROWS * 210                    # the text column alone
    # held whole, the rows alone are more than the answer's bytes; a batch at a time, a fraction of them
    assert peak < answer_bytes / 4, f"{peak / 1e6:.1f} MB held for an answer of {answer_bytes / 1e6:.1f} MB"
    text = out.read_text(encoding="utf-8")
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        assert rows[0] == ["id", "text", "score"] and len(rows) == ROWS + 1
        assert rows[-1] == [str(ROWS - 1), "x" * 200 + str(ROWS - 1), str((ROWS - 1) * 0.5)]
    elif fmt == "json":
        rows = json.loads(text)
        assert len(rows) == ROWS and rows[12_345] == {"id": 12_345, "text": "x" * 200 + "12345", "score": 6172.5}
    else:
        assert f"({ROWS:,} rows, {TABLE_ROWS_SHOWN} shown" in text.splitlines()[-1]


@pytest.mark.parametrize("batches", [[], [[]], [[(1, "a")]], [[(1, "a"), (2, None)], [], [(3, "c\n\"d\"")]]])
def test_json_written_a_batch_at_a_time_is_the_array_json_dump_writes(batches):
    out = io.StringIO()
    write_rows(["n", "s"], batches, "json", out)
    rows = [dict(zip(["n", "s"], row)) for batch in batches for row in batch]
    assert out.getvalue() == json.dumps(rows, indent=1, ensure_ascii=False) + "\n"


def table_lines(rows: int) -> list[str]:
    out = io.StringIO()
    write_rows(["n", "word"], ([(i, f"w{i}") for i in range(start, min(start + 7, rows))]
                               for start in range(0, rows, 7)), "table", out)
    return out.getvalue().rstrip("\n").split("\n")


def test_a_table_shows_its_first_and_last_rows_and_says_how_many_more():
    lines = table_lines(1000)
    half = TABLE_ROWS_SHOWN // 2
    body = lines[2:-1]
    assert len(body) == TABLE_ROWS_SHOWN + 1                      # the rows shown and the "…" line between
    assert [b.split()[0] for b in body[:half]] == [str(i) for i in range(half)]
    assert body[half].split()[0] == "…"
    assert [b.split()[0] for b in body[half + 1:]] == [str(i) for i in range(1000 - half, 1000)]
    assert lines[-1] == (f"(1,000 rows, {TABLE_ROWS_SHOWN} shown: the first {half} and the last {half}; "
                         "--format csv or json gives every row)")


@pytest.mark.parametrize("rows", [0, 1, TABLE_ROWS_SHOWN])
def test_a_table_that_fits_shows_every_row(rows):
    lines = table_lines(rows)
    assert len(lines) == rows + 3 and "…" not in "".join(lines)
    assert lines[-1] == f"({rows} row{'s' if rows != 1 else ''})"


def test_print_rows_is_write_rows_of_one_batch():
    one, other = io.StringIO(), io.StringIO()
    print_rows(["a"], [(1,), (2,)], "csv", one)
    write_rows(["a"], [[(1,)], [(2,)]], "csv", other)
    assert one.getvalue() == other.getvalue() == "a\r\n1\r\n2\r\n"


def test_a_listing_in_hand_shows_every_row_it_was_asked_for():
    """`status --limit 100`, `llm models`: rows already in hand, as many as asked for, all shown."""
    out = io.StringIO()
    print_rows(["n"], [(i,) for i in range(TABLE_ROWS_SHOWN * 2)], "table", out)
    lines = out.getvalue().rstrip("\n").split("\n")
    assert len(lines) == TABLE_ROWS_SHOWN * 2 + 3 and lines[-1] == f"({TABLE_ROWS_SHOWN * 2} rows)"


def test_an_answer_past_the_spill_limit_stops_in_one_line(warehouse, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CASEFORGE_QUERY_TEMP_LIMIT", "2MB")
    code = main(["sql", WIDE, "--format", "csv", "--db", str(warehouse), "--timeout", "0"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.strip() == ("caseforge: query stopped: the answer is larger than its temporary limit of 2MB "
                           "(CASEFORGE_QUERY_TEMP_LIMIT): ask for fewer rows or columns (LIMIT, WHERE)")


def test_the_statement_timeout_stops_the_fetching_too(warehouse, tmp_path):
    """The answer is computed as it is fetched: a statement that answers at once but streams for long is still
    stopped at its timeout (run in a child with a deadline of its own, so a regression fails, not hangs)."""
    endless = "SELECT range, hash(range) FROM range(10000000000)"
    done = subprocess.run([sys.executable, "-m", "caseforge", "sql", endless, "--format", "csv", "--timeout", "1",
                           "--db", str(warehouse)], capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "CASEFORGE_QUERY_TEMP_LIMIT": "100GB"})
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.strip().startswith("caseforge: query stopped after 1 s, its statement timeout"), done.stderr


@pytest.mark.parametrize("text, size", [("4GB", 4_000_000_000), ("4GiB", 4 * 1024 ** 3), ("512MB", 512_000_000),
                                        ("1.5 kb", 1500), ("1000", 1000)])
def test_sizes_read_as_duckdb_reads_them(text, size):
    assert size_in_bytes(text) == size


def test_quality_json_nests_failed_expectations(tmp_path, capsys):
    db = tmp_path / "cf.duckdb"
    con = connect(db)
    run_id = start_run(con, "ingest", "oyez")
    failed = [{"expectation": "expect_column_values_to_not_be_null", "column": "name", "unexpected": 2}]
    con.execute("INSERT INTO ops.quality_results (run_id, table_name, suite, validated_at, success, rows_checked, "
                "rows_failed, batch_rejected, failed_expectations) VALUES (?, 'scotus_legacy', 'scotus_legacy', ?, "
                "false, 5, 2, true, ?)", [run_id, datetime.now(timezone.utc), json.dumps(failed)])
    con.close()
    assert main(["quality", "--format", "json", "--db", str(db)]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer[0]["failed_expectations"] == [failed]              # one list per failed batch
    assert main(["quality", "--format", "csv", "--db", str(db)]) == 1
    row = next(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert json.loads(row["failed_expectations"]) == [failed]
