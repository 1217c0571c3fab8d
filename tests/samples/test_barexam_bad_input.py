"""One bad Bar Exam line never loses the others: a passage line that is not UTF-8 or has fields of the wrong type,
a question row with the wrong field count, and files or records over the size limit are quarantined with the file
and line and the reason; the rest lands."""
from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import duckdb
import pytest

from caseforge.settings import Settings
from caseforge.tasks.barexam import ingest
from caseforge.tasks.barexam.parse import parse_passages, parse_questions

pytestmark = pytest.mark.samples


def _passage_lines(samples_dir: Path, n: int = 30) -> list[bytes]:
    return (samples_dir / "barexam" / "passages_mbe_gold.jsonl").read_bytes().splitlines()[:n]


def _question_records(samples_dir: Path, n: int = 30) -> list[list[str]]:
    csv.field_size_limit(sys.maxsize)
    with (samples_dir / "barexam" / "barexam_qa.csv").open(newline="", encoding="utf-8") as source:
        return [row for _, row in zip(range(n + 1), csv.reader(source))]


def _csv(records) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(records)
    return out.getvalue().encode("utf-8")


BAD_PASSAGE_LINES = [
    (b'{"idx": "mbe_x1", "source": "x", "text": "caf\xff\xfe"}', "not UTF-8"),
    (json.dumps({"idx": {"id": 1}, "text": "t"}).encode(), "idx"),
    (json.dumps({"idx": "mbe_x3", "text": ["a", "b"]}).encode(), "text"),
    (b"[" * 100_000, "not JSON"),
    (b'{"idx": "mbe_x5", "text": "cut in the mid', "not JSON"),
]


@pytest.mark.parametrize("line, why", BAD_PASSAGE_LINES, ids=[w for _, w in BAD_PASSAGE_LINES])
def test_a_bad_passage_line_is_one_problem_and_every_other_line_is_read(samples_dir, line, why):
    lines = _passage_lines(samples_dir)
    good, _ = parse_passages(b"\n".join(lines) + b"\n", "0" * 64)
    frame, problems = parse_passages(b"\n".join(lines[:10] + [line] + lines[10:]) + b"\n", "0" * 64)
    assert list(frame["passage_id"]) == list(good["passage_id"]) and len(good) == 30
    [problem] = problems
    assert problem.startswith("line 11: ") and why in problem, problem


def test_a_question_row_with_the_wrong_field_count_loses_only_that_row(samples_dir):
    records = _question_records(samples_dir)
    good, _ = parse_questions(_csv(records), "0" * 64)
    body = _csv(records[:11]) + b"mbe_bad,too,few\n" + _csv(records[11:])
    frame, problems = parse_questions(body, "0" * 64)
    assert list(frame["question_id"]) == list(good["question_id"]) and len(good) == 30
    line = _csv(records[:11]).count(b"\n") + 1
    assert len(problems) == 1 and problems[0].startswith(f"line {line}: 3 fields"), problems


def test_bad_lines_are_quarantined_and_the_rest_lands_in_the_warehouse(samples_dir, tmp_path, db_path):
    folder = tmp_path / "barexam"
    folder.mkdir()
    lines = _passage_lines(samples_dir)
    (folder / "passages_mbe_gold.jsonl").write_bytes(b"\n".join(lines[:10] + [BAD_PASSAGE_LINES[0][0]] + lines[10:]))
    records = _question_records(samples_dir)
    (folder / "barexam_qa.csv").write_bytes(_csv(records[:11]) + b"mbe_bad,too,few\n" + _csv(records[11:]))
    report = ingest.refresh(Settings(db_path=db_path), from_dir=str(folder))
    con = duckdb.connect(str(db_path), read_only=True)
    assert con.execute("SELECT count(*) FROM curated.barexam_passages").fetchone() == (30,)
    assert con.execute("SELECT count(*) FROM curated.barexam_questions").fetchone() == (30,)
    con.close()
    line = _csv(records[:11]).count(b"\n") + 1                 # a physical line: prompts span several
    assert sorted(failure.split(":")[0] for failure in report.failures) == \
        [f"barexam barexam_qa.csv line {line}", "barexam passages_mbe_gold.jsonl line 11"]


def test_files_and_records_over_the_size_limits_are_quarantined(samples_dir, tmp_path, db_path, monkeypatch):
    folder = tmp_path / "barexam"
    folder.mkdir()
    lines = _passage_lines(samples_dir)
    longest = max(range(len(lines)), key=lambda i: len(lines[i]))
    (folder / "passages_mbe_gold.jsonl").write_bytes(b"\n".join(lines))
    (folder / "barexam_qa.csv").symlink_to(samples_dir / "barexam" / "barexam_qa.csv")    # 2.4 MB
    monkeypatch.setenv("CASEFORGE_MAX_MB_BAREXAM_RECORD", str((len(lines[longest]) - 1) / 1024 / 1024))
    monkeypatch.setenv("CASEFORGE_MAX_MB_BAREXAM_FILE", "1")
    report = ingest.refresh(Settings(db_path=db_path), from_dir=str(folder))
    con = duckdb.connect(str(db_path), read_only=True)
    assert con.execute("SELECT count(*) FROM curated.barexam_passages").fetchone() == (29,)
    assert con.execute("SELECT count(*) FROM ops.raw_payloads WHERE key = 'barexam_qa.csv'").fetchone() == (0,)
    con.close()
    assert sorted(report.failures) == [
        "barexam barexam_qa.csv: 2.3 MB is over the barexam file limit of 1.0 MB "
        "(set CASEFORGE_MAX_MB_BAREXAM_FILE to raise it); not parsed",
        f"barexam passages_mbe_gold.jsonl line {longest + 1}: {len(lines[longest]):,} bytes is over the barexam "
        f"record limit of {len(lines[longest]) - 1:,} bytes (set CASEFORGE_MAX_MB_BAREXAM_RECORD to raise it); "
        "not parsed"]
