"""Golden tests: real Oyez case-detail responses and their expected rows (reviewed by eye).

tests/golden/oyez/<name>.compare.json holds the whole expected row for each example (tests/golden/golden.py
compares, times and writes them; `.venv/bin/python tests/golden/regenerate.py oyez` rewrites them); the
explicit asserts below repeat the facts a reviewer checked against the historical record.
"""
import json
from datetime import date
from functools import partial
from pathlib import Path

import pytest
from golden.golden import assert_golden

from caseforge.tasks.oyez.parse import OyezParseError, parse_case

pytestmark = pytest.mark.samples
SOURCE = "oyez"


def parsed(samples_dir: Path, name: str) -> dict:
    row = parse_case((samples_dir / "oyez" / "cases" / f"{name}.json").read_bytes())
    row.pop("raw_sha256")
    row["decisions"] = json.loads(row["decisions"])
    return row


# example name (= the sample file's stem under samples/oyez/cases) → the parsed row
EXAMPLES = {name: partial(parsed, name=name) for name in (
    "1789_1850.10us87",      # Fletcher v. Peck: docket "None", a pre-1883 date
    "1789_1850.17us316",     # McCulloch v. Maryland: two decisions
    "1789_1850.none",        # United States v. The Amistad: file named "none", no decision records
    "1971.70-18",            # Roe v. Wade: argued twice, Chicago-midnight dates
    "2015.14-1096",          # Luna Torres v. Lynch: term 2015, page of '578 U.S. ___' not yet assigned
    "2021.19-1392",          # decided, no decision records yet, citation page not assigned
)}


@pytest.mark.parametrize("name", EXAMPLES)
def test_matches_reviewed_golden_row(samples_dir, name):
    assert_golden(SOURCE, name, EXAMPLES[name], samples_dir)


def test_roe_v_wade(samples_dir):
    row = parsed(samples_dir, "1971.70-18")
    assert (row["name"], row["term"], row["docket"]) == ("Roe v. Wade", "1971", "70-18")
    assert row["decided_date"] == date(1973, 1, 22)      # Decided, in America/Chicago
    assert row["argued_date"] == date(1971, 12, 13)      # first of two arguments
    assert (row["majority_vote"], row["minority_vote"], row["winning_party"]) == (7, 2, "Jane Roe")
    assert row["citation"] == "410 U.S. 113"
    assert "(recognized in Griswold v. Connecticut)" in row["conclusion"]
    assert "<" not in row["facts"] and "  " not in row["facts"]


def test_1810_case_with_docket_none(samples_dir):
    row = parsed(samples_dir, "1789_1850.10us87")
    assert (row["name"], row["term"], row["docket"]) == ("Fletcher v. Peck", "1789-1850", None)
    assert row["decided_date"] == date(1810, 3, 16)      # pre-1883 dates: local mean time, same day
    assert row["citation"] == "10 U.S. 87"


def test_multi_decision_case_keeps_every_decision(samples_dir):
    row = parsed(samples_dir, "1789_1850.17us316")
    assert row["name"] == "McCulloch v. Maryland" and row["decision_count"] == 2
    assert [d["description"] for d in row["decisions"]] == [
        "Congress has the power under the Necessary and Proper Clause to charter the second Bank of the United States.",
        "Maryland may not impose a tax on the bank.",
    ]
    assert (row["majority_vote"], row["minority_vote"]) == (6, 0)
    assert row["question"].count("\n") == 1             # two questions, two lines


def test_decided_case_without_decision_records(samples_dir):
    row = parsed(samples_dir, "2021.19-1392")
    assert row["decided_date"] == date(2022, 6, 24) and row["decision_count"] == 0
    assert row["majority_vote"] is None and row["winning_party"] is None
    assert row["citation"] == "597 U.S. ___"             # page not yet assigned


def test_every_sample_case_parses(samples_dir):
    files = sorted((samples_dir / "oyez" / "cases").glob("*.json"))
    assert len(files) >= 200
    ids = set()
    for path in files:
        row = parse_case(path.read_bytes(), raw_sha256="0" * 64)
        assert row["name"], path.name
        assert row["case_id"] not in ids, path.name
        ids.add(row["case_id"])
        for field in ("facts", "question", "conclusion"):
            text = row[field]
            assert text is None or ("<p>" not in text and "&amp;" not in text and "  " not in text), (path.name, field)
        if row["decided_date"] is not None:
            assert date(1790, 1, 1) <= row["decided_date"] <= date(2030, 1, 1), path.name


def test_non_case_payloads_raise_a_clear_error():
    with pytest.raises(OyezParseError, match="truncated JSON"):
        parse_case(b'{"ID": 1, "name": "Roe v. Wa')
    with pytest.raises(OyezParseError, match="expected a case object"):
        parse_case(b"[1, 2]")
    with pytest.raises(OyezParseError, match="no numeric ID"):
        parse_case(b'{"name": "No id"}')
