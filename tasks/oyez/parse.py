"""Oyez case-detail JSON → one curated.scotus_cases row. Pure: bytes in, dict out."""
from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from caseforge.text import html_to_text

COURT_TZ = ZoneInfo("America/Chicago")

# Columns of staging/curated.scotus_cases, in order (sql/migrations/002_oyez.sql).
COLUMNS = [
    "case_id", "name", "term", "docket", "decided_date", "argued_date", "first_party", "second_party",
    "first_party_label", "second_party_label", "facts", "question", "conclusion", "description",
    "decision_type", "majority_vote", "minority_vote", "winning_party", "decision_count", "decisions",
    "citation", "citation_volume", "citation_page", "citation_year", "lower_court",
    "manner_of_jurisdiction", "justia_url", "source_url", "raw_sha256",
]


class OyezParseError(ValueError):
    """The payload is not a usable Oyez case detail; the message says why."""


def oyez_date(seconds: int | float | None) -> date | None:
    """Oyez stores dates as Unix seconds at local midnight in America/Chicago.

    Rounding to the nearest local midnight absorbs the odd record stamped an hour off
    (standard instead of daylight time) without moving any correct date.
    """
    if seconds is None:
        return None
    local = datetime.fromtimestamp(float(seconds), COURT_TZ)
    return (local + timedelta(hours=12)).date()


def _event_dates(timeline: list | None, event: str) -> list[date]:
    dates = []
    for entry in timeline or []:
        if entry and entry.get("event") == event:
            dates.extend(d for d in (oyez_date(s) for s in entry.get("dates") or []) if d is not None)
    return sorted(dates)


def _clean_str(value) -> str | None:
    if value is None:
        return None
    text = html_to_text(str(value))
    return text if text and text.lower() != "none" else None


def citation_string(citation: dict | None) -> str | None:
    """'410 U.S. 113'; a slip opinion without a page yet reads '579 U.S. ___'."""
    if not citation or not citation.get("volume"):
        return None
    page = citation.get("page")
    return f"{citation['volume']} U.S. {page if page else '___'}"


def _int_or_none(value) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _decision_summary(decision: dict) -> dict:
    return {
        "decision_type": decision.get("decision_type"),
        "majority_vote": _int_or_none(decision.get("majority_vote")),
        "minority_vote": _int_or_none(decision.get("minority_vote")),
        "winning_party": _clean_str(decision.get("winning_party")),
        "description": _clean_str(decision.get("description")),
    }


def load_case_json(body: bytes) -> dict:
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise OyezParseError(f"not UTF-8: {exc}") from exc
    if not text.strip():
        raise OyezParseError("empty body")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OyezParseError(f"invalid or truncated JSON: {exc.msg} at char {exc.pos}") from exc
    if not isinstance(data, dict):
        raise OyezParseError(f"expected a case object, got a JSON {type(data).__name__}")
    return data


def parse_case(body: bytes, raw_sha256: str | None = None) -> dict:
    """One scotus_cases row. A missing name passes through as null: the gate quarantines it."""
    data = load_case_json(body)
    case_id = _int_or_none(data.get("ID"))
    if case_id is None:
        raise OyezParseError("no numeric ID: not an Oyez case detail")
    decisions = [d for d in (data.get("decisions") or []) if isinstance(d, dict)]
    summaries = [_decision_summary(d) for d in decisions]
    main = summaries[0] if summaries else {}
    decided = _event_dates(data.get("timeline"), "Decided")
    argued = _event_dates(data.get("timeline"), "Argued")
    citation = data.get("citation") or {}
    docket = data.get("docket_number")
    lower_court = data.get("lower_court")
    return {
        "case_id": case_id,
        "name": _clean_str(data.get("name")),
        "term": str(data["term"]) if data.get("term") is not None else None,
        "docket": None if docket in (None, "", "None") else str(docket).strip(),
        "decided_date": decided[-1] if decided else None,
        "argued_date": argued[0] if argued else None,
        "first_party": _clean_str(data.get("first_party")),
        "second_party": _clean_str(data.get("second_party")),
        "first_party_label": _clean_str(data.get("first_party_label")),
        "second_party_label": _clean_str(data.get("second_party_label")),
        "facts": html_to_text(data.get("facts_of_the_case")),
        "question": html_to_text(data.get("question")),
        "conclusion": html_to_text(data.get("conclusion")),
        "description": html_to_text(data.get("description")),
        "decision_type": main.get("decision_type"),
        "majority_vote": main.get("majority_vote"),
        "minority_vote": main.get("minority_vote"),
        "winning_party": main.get("winning_party"),
        "decision_count": len(summaries),
        "decisions": json.dumps(summaries, ensure_ascii=False),
        "citation": citation_string(citation),
        "citation_volume": _int_or_none(citation.get("volume")),
        "citation_page": _int_or_none(citation.get("page")),
        "citation_year": _int_or_none(citation.get("year")),
        "lower_court": _clean_str(lower_court.get("name")) if isinstance(lower_court, dict) else None,
        "manner_of_jurisdiction": _clean_str(data.get("manner_of_jurisdiction")),
        "justia_url": data.get("justia_url") or None,
        "source_url": data.get("href") or None,
        "raw_sha256": raw_sha256,
    }


def parse_case_list(body: bytes) -> list[dict]:
    """The /cases list: a bare JSON array of summaries."""
    try:
        data = json.loads(body.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OyezParseError(f"case list is not valid JSON: {exc}") from exc
    if not isinstance(data, list):
        raise OyezParseError(f"case list must be a JSON array, got {type(data).__name__}")
    return [item for item in data if isinstance(item, dict) and item.get("href")]


def detail_key(term: str, docket: str | None) -> str:
    """Archive key of a case detail, the `{term}/{docket}` part of its API URL."""
    return f"{term}/{(docket or 'none').strip().lower().replace(' ', '_')}"


def key_from_href(href: str) -> str:
    """'https://api.oyez.org/cases/1971/70-18' → '1971/70-18'."""
    parts = href.rstrip("/").split("/")
    return f"{parts[-2]}/{parts[-1]}"
