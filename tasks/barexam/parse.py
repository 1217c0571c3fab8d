"""Bar Exam QA files → rows: barexam_qa.csv (questions) and passages_*.jsonl (passages)."""
from __future__ import annotations

import json

import pandas as pd

from caseforge.archive import size_problem
from caseforge.text import cell_text, cell_texts, csv_records

QUESTION_COLUMNS = ["question_id", "dataset", "source", "subject", "prompt", "question", "choice_a", "choice_b",
                    "choice_c", "choice_d", "answer", "gold_passage_id", "raw_sha256"]
PASSAGE_COLUMNS = ["passage_id", "source", "text", "raw_sha256"]
REQUIRED_QA = {"idx", "question", "choice_a", "choice_b", "choice_c", "choice_d", "answer"}


def parse_questions(body: bytes, raw_sha256: str) -> tuple[pd.DataFrame, list[str]]:
    """Question rows and one message per row that cannot be a question (no id, a missing option, bad answer)."""
    rows = []
    records, problems = csv_records(body, REQUIRED_QA, "barexam_qa.csv",
                                    lambda size: size_problem("barexam", "record", size))
    for number, record in records:
        row = {
            "question_id": cell_text(record.get("idx")),
            **cell_texts(record, ("dataset", "source", "subject", "prompt", "question",
                                  *(f"choice_{c}" for c in "abcd"))),
            "answer": (cell_text(record.get("answer")) or "").upper() or None,
            "gold_passage_id": cell_text(record.get("gold_idx")),
            "raw_sha256": raw_sha256,
        }
        if not row["question_id"]:
            problems.append(f"line {number}: no idx")
            continue
        rows.append(row)
    return pd.DataFrame(rows, columns=QUESTION_COLUMNS), problems


def _field(record: dict, name: str, ident: bool = False) -> str | None:
    """A passage field as text; ValueError naming it when it holds a list, an object or a boolean."""
    value = record.get(name)
    if value is None or isinstance(value, str) or (ident and isinstance(value, int) and not isinstance(value, bool)):
        return cell_text(value)
    kind = {dict: "an object", list: "a list", bool: "a boolean"}.get(type(value), type(value).__name__)
    raise ValueError(f"{name} is {kind}, not text")


def parse_passages(body: bytes, raw_sha256: str) -> tuple[pd.DataFrame, list[str]]:
    """Passage rows and one message ("line N: why") per line that cannot be a passage: not UTF-8, not JSON,
    not an object, no idx, a field of the wrong type, over the record size limit. The other lines are read."""
    rows, problems = [], []
    for number, raw in enumerate(body.removeprefix(b"\xef\xbb\xbf").split(b"\n"), start=1):
        if not raw.strip():
            continue
        reason = size_problem("barexam", "record", len(raw))
        if reason is None:
            try:
                record = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                reason = f"not UTF-8 (byte {exc.start})"
            except json.JSONDecodeError as exc:
                reason = f"not JSON ({exc.msg} at column {exc.colno})"
            except ValueError as exc:           # a number of more than 4,300 digits
                reason = f"not JSON ({exc})"
            except RecursionError:
                reason = "not JSON (nested too deeply to read)"
        if reason is None and not isinstance(record, dict):
            reason = "not a JSON object"
        if reason is None:
            try:
                passage_id = _field(record, "idx", ident=True)
                row = {"passage_id": passage_id, "source": _field(record, "source"), "text": _field(record, "text"),
                       "raw_sha256": raw_sha256}
            except ValueError as exc:
                reason = str(exc)
            else:
                if not passage_id:
                    reason = "no idx"
        if reason is not None:
            problems.append(f"line {number}: {reason}")
            continue
        rows.append(row)
    return pd.DataFrame(rows, columns=PASSAGE_COLUMNS), problems
