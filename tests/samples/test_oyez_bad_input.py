"""One bad Oyez input never loses the others: wrongly typed fields, broken list entries, broken legacy lines
and oversized files are quarantined with the file (and line or key) and the reason; the rest lands."""
from __future__ import annotations

import csv
import io
import itertools
import json
from pathlib import Path

import pytest

from caseforge.settings import Settings
from caseforge.tasks.oyez import ingest
from caseforge.tasks.oyez.legacy import parse_legacy_table
from caseforge.tasks.oyez.parse import OyezParseError, parse_case, read_case_list
from warehouse_rows import rows as _table

pytestmark = pytest.mark.samples

GOOD = 40          # real case files that must land whatever sits beside them
# a wrongly typed field (as json.loads gives it) -> the field the quarantine reason must name
WRONG_TYPES = {
    "timeline": ("x", "timeline"),
    "citation": (5, "citation"),
    "ID": ("1e400", "ID"),                                     # json.loads gives float('inf')
    "dates": ([{"event": "Decided", "dates": ["x"]}], "timeline[0].dates[0]"),
}


def _case_files(samples_dir: Path) -> list[Path]:
    return sorted((samples_dir / "oyez" / "cases").glob("*.json"))


def _mutated(path: Path, field: str) -> bytes:
    data = json.loads(path.read_bytes())
    value, _ = WRONG_TYPES[field]
    if field == "dates":
        data["timeline"] = value
    elif field == "ID":
        return json.dumps(data).replace(f'"ID": {data["ID"]}', '"ID": 1e400', 1).encode()
    else:
        data[field] = value
    return json.dumps(data).encode()


@pytest.mark.parametrize("field", WRONG_TYPES)
def test_parse_case_turns_a_wrongly_typed_field_into_a_parse_error_naming_the_field(samples_dir, field):
    body = _mutated(_case_files(samples_dir)[0], field)
    with pytest.raises(OyezParseError, match=WRONG_TYPES[field][1].replace("[", r"\[").replace("]", r"\]")):
        parse_case(body)


def test_wrongly_typed_fields_quarantine_their_files_and_every_good_file_lands(samples_dir, tmp_path, db_path):
    files = _case_files(samples_dir)
    folder = tmp_path / "cases"
    folder.mkdir()
    for path in files[:GOOD]:
        (folder / path.name).symlink_to(path)
    bad_names = {}
    for field, path in zip(WRONG_TYPES, files[GOOD:]):
        name = f"bad_{field}.{path.name}"
        (folder / name).write_bytes(_mutated(path, field))
        bad_names[field] = name
    report = ingest.refresh(Settings(db_path=db_path), from_dir=str(folder))
    good_ids = {json.loads(p.read_bytes())["ID"] for p in files[:GOOD]}
    landed = {row[0] for row in _table(db_path, "SELECT case_id FROM curated.scotus_cases")}
    assert landed == good_ids
    assert not report.ok and report.counts["quarantined"] == len(WRONG_TYPES)
    assert len(report.failures) == len(WRONG_TYPES)
    for field, name in bad_names.items():
        [line] = [f for f in report.failures if name in f]
        assert WRONG_TYPES[field][1] in line, line
    reasons = [r[0] for r in _table(db_path, "SELECT reason FROM ops.quarantine WHERE stage = 'parse'")]
    assert len(reasons) == len(WRONG_TYPES)


def test_a_bad_summary_in_the_case_list_is_reported_and_the_other_summaries_are_kept(samples_dir):
    summaries = json.loads((samples_dir / "oyez" / "case_list" / "case_summaries.head.json").read_bytes())
    broken = list(summaries)
    broken[3] = dict(broken[3], href=5)
    items, problems = read_case_list(json.dumps(broken).encode())
    assert [i["ID"] for i in items] == [s["ID"] for k, s in enumerate(summaries) if k != 3]
    [problem] = problems
    assert problem.startswith(f"entry 3 (ID {summaries[3]['ID']})") and "href" in problem


def _csv_bytes(records: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(records)
    return out.getvalue().encode("utf-8")


def test_a_broken_line_in_the_legacy_table_loses_only_that_line(samples_dir):
    with (samples_dir / "oyez" / "legacy_justice_table.csv").open(newline="", encoding="utf-8") as source:
        records = list(itertools.islice(csv.reader(source), 41))
    good, good_problems = parse_legacy_table(_csv_bytes(records), "0" * 64)
    assert good_problems == [] and len(good) == 40
    head = _csv_bytes(records[:21])
    broken_line = b",".join([b"x"] * (len(records[0]) + 3)) + b"\n"          # three fields too many
    body = head + broken_line + _csv_bytes(records[21:])
    frame, problems = parse_legacy_table(body, "0" * 64)
    assert list(frame["case_id"]) == list(good["case_id"])
    line = head.count(b"\n") + 1
    assert problems == [f"line {line}: {len(records[0]) + 3} fields where the header has {len(records[0])}"]


def test_a_case_file_over_the_size_limit_is_quarantined_before_parsing(samples_dir, tmp_path, db_path):
    files = _case_files(samples_dir)[:5]
    folder = tmp_path / "cases"
    folder.mkdir()
    for path in files:
        (folder / path.name).symlink_to(path)
    huge = json.loads(_case_files(samples_dir)[6].read_bytes())
    huge["facts_of_the_case"] = "<p>" + "x" * 3_000_000 + "</p>"      # over the 2 MB default
    (folder / "huge.json").write_text(json.dumps(huge))
    report = ingest.refresh(Settings(db_path=db_path), from_dir=str(folder))
    assert len(_table(db_path, "SELECT case_id FROM curated.scotus_cases")) == 5
    [line] = report.failures
    assert "huge.json" in line and "over the oyez case limit" in line and "CASEFORGE_MAX_MB_OYEZ_CASE" in line
    assert _table(db_path, "SELECT count(*) FROM ops.raw_payloads WHERE key LIKE '%huge%'") == [(0,)]


def test_a_broken_case_list_is_quarantined_not_a_crash(db_path):
    import httpx

    def server(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b'[{"ID": 1, "href": "https://api.oyez.org/cases/1999/1-1"')   # cut

    settings = Settings(db_path=db_path, requests_per_second=0, max_retries=0, backoff_base_s=0.01)
    report = ingest.refresh(settings, transport=httpx.MockTransport(server), sleep=lambda s: None)
    [line] = report.failures
    assert line.startswith("oyez list/all: case list is not valid JSON")
    assert _table(db_path, "SELECT source_key, stage FROM ops.quarantine") == [("list/all", "parse")]
