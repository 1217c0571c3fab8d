"""The legacy Oyez-derived case table (Kaggle 'justice.csv'): CSV bytes → scotus_legacy rows."""
from __future__ import annotations


import pandas as pd

from caseforge.load import batch_frame
from caseforge.text import cell_text, cell_texts, csv_records, html_to_text

LEGACY_COLUMNS = [
    "case_id", "name", "source_url", "docket", "term", "first_party", "second_party", "facts",
    "majority_vote", "minority_vote", "first_party_winner", "decision_type", "disposition", "issue_area",
    "raw_sha256",
]
REQUIRED = {"ID", "name", "facts", "disposition"}


def _bool(value) -> bool | None:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return None
    text = str(value).strip().lower()
    return {"true": True, "false": False, "1": True, "0": False}.get(text)


def _int(value) -> int | None:
    try:
        return None if value is None or pd.isna(value) else int(float(value))
    except (TypeError, ValueError, OverflowError):          # 'x', '1e400', 'nan'
        return None


def parse_legacy_table(body: bytes, raw_sha256: str) -> tuple[pd.DataFrame, list[str]]:
    """Rows for staging.scotus_legacy and one message per row that could not be read."""
    rows = []
    records, problems = csv_records(body, REQUIRED, "legacy table")
    for number, record in records:
        case_id = _int(record.get("ID"))
        if case_id is None:
            problems.append(f"line {number}: no numeric ID")
            continue
        rows.append({
            "case_id": case_id,
            **cell_texts(record, ("name", "docket", "term", "first_party", "second_party", "decision_type",
                                  "disposition", "issue_area")),
            "source_url": cell_text(record.get("href")),
            "facts": html_to_text(cell_text(record.get("facts"))),
            "majority_vote": _int(record.get("majority_vote")),
            "minority_vote": _int(record.get("minority_vote")),
            "first_party_winner": _bool(record.get("first_party_winner")),
            "raw_sha256": raw_sha256,
        })
    return batch_frame(rows, LEGACY_COLUMNS, "case_id"), problems
