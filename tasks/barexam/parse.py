"""Bar Exam QA files → rows: barexam_qa.csv (questions) and passages_*.jsonl (passages)."""
from __future__ import annotations

import json

import pandas as pd

from caseforge.text import cell_text, csv_records

QUESTION_COLUMNS = ["question_id", "dataset", "source", "subject", "prompt", "question", "choice_a", "choice_b",
                    "choice_c", "choice_d", "answer", "gold_passage_id", "raw_sha256"]
PASSAGE_COLUMNS = ["passage_id", "source", "text", "raw_sha256"]
REQUIRED_QA = {"idx", "question", "choice_a", "choice_b", "choice_c", "choice_d", "answer"}


def parse_questions(body: bytes, raw_sha256: str) -> tuple[pd.DataFrame, list[str]]:
    """Question rows and one message per row that cannot be a question (no id, a missing option, bad answer)."""
    rows = []
    records, problems = csv_records(body, REQUIRED_QA, "barexam_qa.csv")
    for number, record in records:
        row = {
            "question_id": cell_text(record.get("idx")),
            "dataset": cell_text(record.get("dataset")),
            "source": cell_text(record.get("source")),
            "subject": cell_text(record.get("subject")),
            "prompt": cell_text(record.get("prompt")),
            "question": cell_text(record.get("question")),
            **{f"choice_{c}": cell_text(record.get(f"choice_{c}")) for c in "abcd"},
            "answer": (cell_text(record.get("answer")) or "").upper() or None,
            "gold_passage_id": cell_text(record.get("gold_idx")),
            "raw_sha256": raw_sha256,
        }
        if not row["question_id"]:
            problems.append(f"line {number}: no idx")
            continue
        rows.append(row)
    return pd.DataFrame(rows, columns=QUESTION_COLUMNS), problems


def parse_passages(body: bytes, raw_sha256: str) -> tuple[pd.DataFrame, list[str]]:
    rows, problems = [], []
    for number, line in enumerate(body.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not JSON ({exc.msg})")
            continue
        passage_id = cell_text(record.get("idx")) if isinstance(record, dict) else None
        if not passage_id:
            problems.append(f"line {number}: no idx")
            continue
        rows.append({"passage_id": passage_id, "source": cell_text(record.get("source")),
                     "text": cell_text(record.get("text")), "raw_sha256": raw_sha256})
    return pd.DataFrame(rows, columns=PASSAGE_COLUMNS), problems
