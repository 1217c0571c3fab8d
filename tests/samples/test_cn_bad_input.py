"""One bad line or record in a Chinese judgment dump never loses the others: a broken JSONL line, a record with
wrongly typed fields, a line over the record limit and a dump over the file limit are quarantined with the file
and line (or doc id) and the reason; the rest lands. And the signing date with an ASCII 0 is read."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from caseforge.archive import RawArchive
from caseforge.stage_report import StageReport
from caseforge.tasks.cn import ingest
from caseforge.tasks.cn.casenumber import parse_cn_date
from caseforge.tasks.cn.records import parse_record, read_dump_rows, record_from_dict
from caseforge.warehouse.connection import connect

pytestmark = pytest.mark.samples

DUMP = "judge_criminal.jsonl"          # 251 real JuDGE records


def _lines(samples_dir: Path) -> list[bytes]:
    return (samples_dir / "cn" / DUMP).read_bytes().splitlines()


def _ingest(con, folder: Path) -> StageReport:
    report = StageReport("t")
    for batch in ingest.batches_of_records(con, 1, RawArchive(con), folder, ingest.dump_files(folder), report):
        ingest.load_judgments(con, 1, ingest.parse_batch(con, 1, batch, report), report)
    return report


def test_a_broken_line_is_reported_by_its_own_number_and_the_other_lines_are_read(samples_dir):
    lines = _lines(samples_dir)
    cut = lines[9].decode("utf-8")[:200].encode("utf-8")                         # line 10 cut after 200 characters
    broken = lines[:9] + [cut] + lines[10:]
    rows, problems = read_dump_rows(DUMP, b"\n".join(broken) + b"\n")
    assert len(rows) == len(lines) - 1
    assert [where for where, _ in rows][:10] == [f"line {n}" for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 11)]
    [(where, reason)] = problems
    assert where == "line 10" and reason.startswith("not JSON")


def test_one_broken_line_in_a_jsonl_dump_quarantines_only_that_line(samples_dir, tmp_path, db_path):
    lines = _lines(samples_dir)
    folder = tmp_path / "dumps"
    folder.mkdir()
    cut = lines[9].decode("utf-8")[:100].encode("utf-8")
    (folder / DUMP).write_bytes(b"\n".join(lines[:9] + [cut] + lines[10:]) + b"\n")
    con = connect(db_path)
    report = _ingest(con, folder)
    assert con.execute("SELECT count(*) FROM curated.cn_judgments").fetchone()[0] == len(lines) - 1
    [line] = report.failures
    assert line.startswith(f"cn file/{DUMP} line 10: not JSON")
    assert con.execute("SELECT source_key FROM ops.quarantine").fetchall() == [(f"file/{DUMP} line 10",)]
    con.close()


# records of every dump format with one field of a type no real record has -> that field
WRONG_TYPES = [
    ({"text_id": "t1", "fd": ["not", "text"]}, "fd"),                       # JuDGE full text as a list
    ({"text_id": {"id": 1}, "fd": "本院认为，应予支持。"}, "text_id"),          # an object for an id
    ({"s5": "s1", "qwContent": "本院认为。", "s11": [1, 2]}, "s11"),           # numbers among the causes
    ({"s5": "s2", "qwContent": "本院认为。", "s7": 5}, "s7"),                  # a number for a case number
    ({"id": 3, "text": [{"sentence": 5}, None]}, "text"),                   # CAIL2020 sentences of the wrong type
    ({"文书ID": "c1", "诉称段": ["x"]}, "诉称段"),                              # CAIL2021 section as a list
    ({"id": "cg", "fact": "事实", "judgement": {"x": 1}}, "judgement"),       # CaseGen judgment as an object
    ({"doc_id": "g1", "full_text": "本院认为。", "court": 7}, "court"),        # generic dump, number for a court
]


@pytest.mark.parametrize("record, field", WRONG_TYPES, ids=[f for _, f in WRONG_TYPES])
def test_a_record_with_a_wrongly_typed_field_is_a_record_error_naming_it(record, field):
    from caseforge.tasks.cn.records import RecordError

    with pytest.raises(RecordError, match=field):
        record_from_dict(record)


def test_records_with_wrongly_typed_fields_quarantine_only_themselves(samples_dir, tmp_path, db_path):
    lines = _lines(samples_dir)[:20]
    bad = [json.dumps(r, ensure_ascii=False).encode("utf-8") for r, _ in WRONG_TYPES]
    folder = tmp_path / "dumps"
    folder.mkdir()
    (folder / "mixed.jsonl").write_bytes(b"\n".join(lines[:10] + bad + lines[10:]) + b"\n")
    con = connect(db_path)
    report = _ingest(con, folder)
    good = {json.loads(line)["text_id"] for line in lines}
    landed = {r[0] for r in con.execute("SELECT doc_id FROM curated.cn_judgments").fetchall()}
    assert landed == good
    assert [line.split(":")[0] for line in report.failures] == \
        [f"cn file/mixed.jsonl line {n}" for n in range(11, 11 + len(WRONG_TYPES))]
    con.close()


def test_a_line_over_the_record_limit_and_a_dump_over_the_file_limit_are_quarantined_unread(
        samples_dir, tmp_path, db_path, monkeypatch):
    lines = _lines(samples_dir)[:12]
    folder = tmp_path / "dumps"
    folder.mkdir()
    longest = max(range(12), key=lambda i: len(lines[i]))
    monkeypatch.setenv("CASEFORGE_MAX_MB_CN_RECORD", str((len(lines[longest]) - 1) / 1024 / 1024))
    (folder / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (folder / "b.jsonl").write_bytes(b"\n".join(_lines(samples_dir)[:40]) + b"\n")      # larger than a.jsonl
    monkeypatch.setenv("CASEFORGE_MAX_MB_CN_DUMP", str((folder / "a.jsonl").stat().st_size / 1024 / 1024))
    con = connect(db_path)
    report = _ingest(con, folder)
    assert con.execute("SELECT count(*) FROM curated.cn_judgments").fetchone()[0] == 11
    first, second = sorted(report.failures)
    assert first == (f"cn file/a.jsonl line {longest + 1}: {len(lines[longest]):,} bytes is over the cn record limit "
                     f"of {len(lines[longest]) - 1:,} bytes (set CASEFORGE_MAX_MB_CN_RECORD to raise it); not parsed")
    assert second.startswith("cn file/b.jsonl: ") and "over the cn dump limit" in second
    assert con.execute("SELECT count(*) FROM ops.raw_payloads WHERE key = 'file/b.jsonl'").fetchone() == (0,)
    con.close()


def test_a_signing_date_with_an_ascii_zero_is_read():
    assert parse_cn_date("二0一八年十二月十六日") == dt.date(2018, 12, 16)
    assert parse_cn_date("二O一九年一月二日") == dt.date(2019, 1, 2)
    assert parse_cn_date("二〇一七年六月二十八日") == dt.date(2017, 6, 28)


def test_the_caseformer_judgment_signed_with_an_ascii_zero_has_its_date(samples_dir):
    rows, _ = read_dump_rows("caseformer_criminal.jsonl", (samples_dir / "cn" / "caseformer_criminal.jsonl").read_bytes())
    row = parse_record(record_from_dict(rows[13][1]))
    assert "二0一八年十二月十六日" in row["tail"] and row["judgment_date"] == dt.date(2018, 12, 16)
