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


# Oyez dates are Unix seconds; anything outside 1716..2223 is not a Supreme Court date but a broken field.
EARLIEST_SECONDS, LATEST_SECONDS = -8_000_000_000, 8_000_000_000
TEXT_FIELDS = ("name", "first_party", "second_party", "first_party_label", "second_party_label", "facts_of_the_case",
               "question", "conclusion", "description", "manner_of_jurisdiction", "justia_url", "href")


def _json_type(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _shown(value) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _wrong(path: str, expected: str, value) -> OyezParseError:
    return OyezParseError(f"{path}: expected {expected}, got {_json_type(value)} {_shown(value)}")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def oyez_date(seconds: int | float | None) -> date | None:
    """Oyez stores dates as Unix seconds at local midnight in America/Chicago.

    Rounding to the nearest local midnight absorbs the odd record stamped an hour off
    (standard instead of daylight time) without moving any correct date.
    """
    if seconds is None:
        return None
    local = datetime.fromtimestamp(float(seconds), COURT_TZ)
    return (local + timedelta(hours=12)).date()


def _timestamp(value, path: str) -> date | None:
    if value is None:
        return None
    if not _is_number(value) or value != value or not EARLIEST_SECONDS <= value <= LATEST_SECONDS:
        raise _wrong(path, "Unix seconds between 1716 and 2223", value)
    return oyez_date(value)


def _timeline(timeline) -> list[tuple[str | None, list[date]]]:
    """(event, dates) of every timeline entry; OyezParseError naming the entry when one is malformed."""
    if timeline is None:
        return []
    if not isinstance(timeline, list):
        raise _wrong("timeline", "a list of events", timeline)
    events = []
    for i, entry in enumerate(timeline):
        if entry is None:
            continue
        if not isinstance(entry, dict):
            raise _wrong(f"timeline[{i}]", "an event object", entry)
        event, dates = entry.get("event"), entry.get("dates")
        if event is not None and not isinstance(event, str):
            raise _wrong(f"timeline[{i}].event", "a string", event)
        if dates is None:
            dates = []
        if not isinstance(dates, list):
            raise _wrong(f"timeline[{i}].dates", "a list of Unix seconds", dates)
        found = [_timestamp(d, f"timeline[{i}].dates[{j}]") for j, d in enumerate(dates)]
        events.append((event, [d for d in found if d is not None]))
    return events


def _event_dates(events: list[tuple[str | None, list[date]]], event: str) -> list[date]:
    return sorted(d for name, dates in events if name == event for d in dates)


def _clean_str(value) -> str | None:
    if value is None:
        return None
    text = html_to_text(str(value))
    return text if text and text.lower() != "none" else None


def _whole_number(value, path: str) -> int | None:
    """A count or citation part: an integer or a numeric string; OyezParseError for anything else."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if _is_number(value) and value == value and abs(value) < 1e15 and float(value).is_integer():
        return int(value)
    raise _wrong(path, "a whole number", value)


def _text_field(data: dict, name: str, path: str | None = None):
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise _wrong(path or name, "a string", value)
    return value


def _decision_summary(decision: dict, path: str) -> dict:
    for name in ("decision_type", "winning_party", "description"):
        _text_field(decision, name, f"{path}.{name}")
    return {
        "decision_type": decision.get("decision_type"),
        "majority_vote": _whole_number(decision.get("majority_vote"), f"{path}.majority_vote"),
        "minority_vote": _whole_number(decision.get("minority_vote"), f"{path}.minority_vote"),
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
    except RecursionError:
        raise OyezParseError("JSON nested too deeply to read") from None
    if not isinstance(data, dict):
        raise OyezParseError(f"expected a case object, got a JSON {type(data).__name__}")
    return data


def _case_id(value) -> int:
    if value is None or value == "" or (isinstance(value, str) and not value.strip().lstrip("-").isdigit()):
        raise OyezParseError("no numeric ID: not an Oyez case detail")
    try:
        case_id = _whole_number(value, "ID")
    except OyezParseError as exc:
        raise OyezParseError(f"{exc} (no numeric ID: not an Oyez case detail)") from None
    if case_id is None:
        raise OyezParseError("no numeric ID: not an Oyez case detail")
    return case_id


def parse_case(body: bytes, raw_sha256: str | None = None) -> dict:
    """One scotus_cases row. A missing name passes through as null: the gate quarantines it.

    A field of the wrong type (a timeline that is not a list, a citation that is not an object, a date that
    is not a number, an ID too large to be one) raises OyezParseError naming the field: the stage
    quarantines this case and the others load."""
    data = load_case_json(body)
    case_id = _case_id(data.get("ID"))
    for name in TEXT_FIELDS:
        _text_field(data, name)
    for name in ("term", "docket_number"):
        value = data.get(name)
        if value is not None and not (isinstance(value, str) or _is_number(value)):
            raise _wrong(name, "a string", value)
    decisions = data.get("decisions")
    if decisions is not None and not isinstance(decisions, list):
        raise _wrong("decisions", "a list of decisions", decisions)
    summaries = []
    for i, decision in enumerate(decisions or []):
        if decision is None:
            continue
        if not isinstance(decision, dict):
            raise _wrong(f"decisions[{i}]", "a decision object", decision)
        summaries.append(_decision_summary(decision, f"decisions[{i}]"))
    main = summaries[0] if summaries else {}
    events = _timeline(data.get("timeline"))
    decided = _event_dates(events, "Decided")
    argued = _event_dates(events, "Argued")
    citation = data.get("citation")
    if citation is None:
        citation = {}
    if not isinstance(citation, dict):
        raise _wrong("citation", "an object {volume, page, year}", citation)
    volume = _whole_number(citation.get("volume"), "citation.volume")
    page = _whole_number(citation.get("page"), "citation.page")
    citation_year = _whole_number(citation.get("year"), "citation.year")
    docket = data.get("docket_number")
    lower_court = data.get("lower_court")
    if lower_court is not None and not isinstance(lower_court, dict):
        raise _wrong("lower_court", "an object {name, ...}", lower_court)
    if lower_court is not None:
        _text_field(lower_court, "name", "lower_court.name")
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
        "citation": f"{volume} U.S. {page if page else '___'}" if volume else None,
        "citation_volume": volume,
        "citation_page": page,
        "citation_year": citation_year,
        "lower_court": _clean_str(lower_court.get("name")) if isinstance(lower_court, dict) else None,
        "manner_of_jurisdiction": _clean_str(data.get("manner_of_jurisdiction")),
        "justia_url": data.get("justia_url") or None,
        "source_url": data.get("href") or None,
        "raw_sha256": raw_sha256,
    }


def read_case_list(body: bytes) -> tuple[list[dict], list[str]]:
    """The /cases list (a bare JSON array of summaries): the usable summaries, and one problem per entry that is
    not one ("entry 3 (ID 50606): href 5 is not a case URL"). A body that is not a JSON array raises
    OyezParseError: then no entry can be trusted."""
    try:
        data = json.loads(body.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OyezParseError(f"case list is not valid JSON: {exc}") from exc
    except RecursionError:
        raise OyezParseError("case list is JSON nested too deeply to read") from None
    if not isinstance(data, list):
        raise OyezParseError(f"case list must be a JSON array, got {type(data).__name__}")
    items, problems = [], []
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            problems.append(f"entry {index}: {_json_type(item)} {_shown(item)}, not a case summary")
            continue
        label = f"entry {index} (ID {_shown(item.get('ID'))})"
        href = item.get("href")
        if not isinstance(href, str) or len(href.rstrip("/").split("/")) < 3:
            problems.append(f"{label}: href {_shown(href)} is not a case URL")
            continue
        items.append(item)
    return items, problems


def detail_key(term: str, docket: str | None) -> str:
    """Archive key of a case detail, the `{term}/{docket}` part of its API URL."""
    return f"{term}/{(docket or 'none').strip().lower().replace(' ', '_')}"


def key_from_href(href: str) -> str:
    """'https://api.oyez.org/cases/1971/70-18' → '1971/70-18'."""
    parts = href.rstrip("/").split("/")
    return f"{parts[-2]}/{parts[-1]}"
