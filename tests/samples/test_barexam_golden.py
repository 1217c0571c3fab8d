"""Golden files for the Bar Exam QA parser on the real samples (barexam_qa.csv, passages_mbe_gold.jsonl).

Each compare file holds what parse_questions / parse_passages give for the whole file (row count and
problems) and the whole rows of a handful of picked questions and passages, with raw_sha256 (an input)
left out and pandas' missing cells as null. Regenerate with
`.venv/bin/python tests/golden/regenerate.py barexam`. The picks were read against the CSV and JSONL
records; no parser defect was found in them. One upstream quirk is passed through on purpose:
mbe_1355's `source` cell holds the gold passage's text instead of an exam name (the CSV says so too).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from golden.golden import assert_golden

from caseforge.tasks.barexam.parse import parse_passages, parse_questions

pytestmark = pytest.mark.samples
SOURCE = "barexam"

QUESTION_PICKS = {
    "mbe_0": "the first row: a fact pattern in `prompt` shared by two questions, no subject",
    "mbe_171": "a prompt with line breaks inside the quoted CSV cell",
    "mbe_494": "the only question with three options (choice_d empty → null)",
    "mbe_565": "a subject-labelled question (CRIM. LAW) whose prompt holds four case summaries",
    "mbe_705": "money options with trailing spaces in the CSV ('$12,000.00 ')",
    "mbe_1355": "upstream quirk: the source cell holds the gold passage's text",
}
PASSAGE_PICKS = {
    "mbe_0": "gold passage of mbe_0, ends with a space in the CSV copy, not in the JSONL",
    "mbe_136": "gold passage of mbe_171",
    "mbe_386": "gold passage of the three-option question mbe_494",
    "mbe_446": "gold passage of mbe_565: several paragraphs, curly quotes, '§' and '¶'",
    "mbe_549": "gold passage of mbe_705",
    "mbe_1038": "gold passage of mbe_1355",
}


def _rows(frame: pd.DataFrame, id_column: str, picks: dict) -> list[dict]:
    frame = frame.drop(columns="raw_sha256").astype(object)
    by_id = {row[id_column]: row for row in frame.where(frame.notna(), None).to_dict("records")}
    return [by_id[key] for key in picks]


def golden_questions(samples_dir: Path) -> dict:
    frame, problems = parse_questions((samples_dir / "barexam" / "barexam_qa.csv").read_bytes(), "0" * 64)
    return {"row_count": len(frame), "problems": problems, "rows": _rows(frame, "question_id", QUESTION_PICKS)}


def golden_passages(samples_dir: Path) -> dict:
    frame, problems = parse_passages((samples_dir / "barexam" / "passages_mbe_gold.jsonl").read_bytes(), "0" * 64)
    return {"row_count": len(frame), "problems": problems, "rows": _rows(frame, "passage_id", PASSAGE_PICKS)}


EXAMPLES = {"questions": golden_questions, "passages": golden_passages}


@pytest.mark.parametrize("example", EXAMPLES)
def test_matches_reviewed_golden_output(samples_dir, example):
    assert_golden(SOURCE, example, EXAMPLES[example], samples_dir)


def test_picked_questions_read_by_eye(samples_dir):
    rows = {r["question_id"]: r for r in golden_questions(samples_dir)["rows"]}
    three = rows["mbe_494"]
    assert (three["choice_a"], three["choice_b"], three["choice_c"]) == \
           ("A contingent remainder", "A vested remainder subject to divestment", "A springing use")
    assert three["choice_d"] is None and three["answer"] == "A"
    assert (rows["mbe_705"]["choice_a"], rows["mbe_705"]["choice_b"]) == ("$12,000.00", "$3,000.00")
    assert rows["mbe_171"]["prompt"].startswith("Passer was driving his pickup truck along a lonely\nroad")
    assert rows["mbe_565"]["subject"] == "CRIM. LAW" and rows["mbe_565"]["source"] == "1991-Feb"
    assert rows["mbe_0"]["subject"] is None and rows["mbe_0"]["gold_passage_id"] == "mbe_0"
    assert rows["mbe_1355"]["source"].startswith("Because the ordinance is not related to the exercise")


def test_every_picked_question_has_its_gold_passage(samples_dir):
    questions = golden_questions(samples_dir)["rows"]
    passages = {r["passage_id"]: r for r in golden_passages(samples_dir)["rows"]}
    assert [q["gold_passage_id"] for q in questions] == list(PASSAGE_PICKS)
    assert all(passages[q["gold_passage_id"]]["text"] for q in questions)
    assert passages["mbe_0"]["text"].endswith("based on hearsay).")                    # stripped
