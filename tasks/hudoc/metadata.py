"""HUDOC metadata records (`columns` of a query result) → rows of curated.echr_judgments. Pure."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path

ITEMID_RE = re.compile(r"^\d{3}-\d+$")
SOURCE_URL = "https://hudoc.echr.coe.int/eng?i={itemid}"

COLUMNS = [
    "itemid", "docname", "doctype", "language", "judgment_date", "appnos", "articles", "importance",
    "chamber", "respondents", "ecli", "conclusion", "originating_body_code", "originating_body",
    "originating_body_type", "separate_opinion", "is_placeholder", "application", "cited_case_law",
    "source_url", "raw_sha256",
]


class MetadataError(ValueError):
    """A record that cannot become a judgment row (the reason is the message)."""


@dataclass(frozen=True)
class RecordFilter:
    """Which records are kept: English judgments by default."""
    doctypes: tuple[str, ...] = ("HEJUD",)
    languages: tuple[str, ...] = ("ENG",)

    def keeps(self, record: dict) -> bool:
        if not isinstance(record, dict):
            return True          # not a record at all: kept so that parse_record reports it
        doctype = str(record.get("doctype") or "").strip().upper()
        language = str(record.get("languageisocode") or "").strip().upper()
        return (not self.doctypes or doctype in self.doctypes) and (not self.languages or language in self.languages)


@lru_cache(maxsize=1)
def originating_bodies() -> dict[str, dict]:
    path = Path(__file__).with_name("originating_bodies.json")
    return json.loads(path.read_text(encoding="utf-8"))["codes"]


NULL_MARKER = "NULL"          # how HUDOC (and the echrod exports) spell a missing value inside a string field
SCALAR = (str, int, float)


def _kind(value) -> str:
    return {dict: "an object", list: "a list", bool: "a boolean"}.get(type(value), type(value).__name__)


def split_list(value, field: str = "value") -> list[str]:
    """A ';'-separated HUDOC field (or an already split list) as a clean list, order kept, no repeats.
    MetadataError when it is neither text nor a list of texts (an object, a list of lists)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, SCALAR) and not isinstance(value, bool):
        items = str(value).split(";")
    else:
        raise MetadataError(f"{field} is {_kind(value)}, not a ';'-separated list")
    out: list[str] = []
    for item in items:
        if item is None:
            continue
        if isinstance(item, bool) or not isinstance(item, SCALAR):
            raise MetadataError(f"{field} holds {_kind(item)}, not text")
        text = str(item).strip()
        if text and text.upper() != NULL_MARKER and text not in out:
            out.append(text)
    return out


_US_FORM = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})\s+\d{1,2}:\d{2}(?::\d{2})?\s*([AP]M)$", re.I)
_DAY_FIRST_FORM = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})(?:\s+\d{1,2}:\d{2}(?::\d{2})?)?$")


def parse_hudoc_date(value) -> date | None:
    """'2023-12-14T00:00:00' (current API), '2/13/2020 12:00:00 AM' (older API, month first)
    or '13/02/2020 00:00:00' (the *AsText / judgementdate form, day first)."""
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        return None
    try:
        if re.match(r"^\d{4}-\d{2}-\d{2}", text):
            return date.fromisoformat(text[:10])
        match = _US_FORM.match(text)
        if match:
            month, day, year = int(match[1]), int(match[2]), int(match[3])
            return date(year, month, day)
        match = _DAY_FIRST_FORM.match(text)
        if match:
            day, month, year = int(match[1]), int(match[2]), int(match[3])
            return date(year, month, day)
    except ValueError as exc:            # '2023-13-45': the form is right, the date impossible
        raise MetadataError(f"impossible date {text!r}: {exc}") from None
    raise MetadataError(f"unrecognised date {text!r}")


def _flag(value) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"true", "1", "yes"}:
        return True
    if text in {"false", "0", "no", ""}:
        return False
    return None


def _text(value, field: str = "value") -> str | None:
    """A text field; None for a missing, blank or NULL-marker value ('NULL' is HUDOC's null, not a value)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, SCALAR):
        raise MetadataError(f"{field} is {_kind(value)}, not text")
    text = str(value).strip()
    return text if text and text.upper() != NULL_MARKER else None


def judgment_date(record: dict) -> date | None:
    for field in ("kpdate", "judgementdate", "kpdateAsText"):
        if record.get(field):
            return parse_hudoc_date(_text(record[field], field))
    return None


def parse_record(record: dict, raw_sha256: str) -> dict:
    """One HUDOC `columns` record as a judgment row; MetadataError when it has no usable itemid or date, or when
    a field has a type no HUDOC record has (an object for a text, a list of lists)."""
    if not isinstance(record, dict):
        raise MetadataError(f"record is {_kind(record)}, not an object")
    raw_id = record.get("itemid") or record.get("_id")
    itemid = _text(raw_id, "itemid") if isinstance(raw_id, str) else None
    if not itemid or not ITEMID_RE.match(itemid):
        raise MetadataError(f"record without a valid itemid: {raw_id!r}"[:200])
    try:
        return _row(itemid, record, raw_sha256)
    except MetadataError as exc:
        raise MetadataError(f"{itemid}: {exc}") from None


def _importance(value) -> int | None:
    importance = _text(value, "importance")
    try:
        number = float(importance) if importance else None
    except ValueError:
        number = None
    if importance and (number is None or not number.is_integer() or not 1 <= number <= 4):
        raise MetadataError(f"importance {importance!r} is not 1, 2, 3 or 4")
    return int(number) if number is not None else None


def _row(itemid: str, record: dict, raw_sha256: str) -> dict:
    when = judgment_date(record)
    if when is None:
        raise MetadataError("no kpdate/judgementdate")
    code = _text(record.get("originatingbody"), "originatingbody")
    body = originating_bodies().get(code or "", {})
    return {
        "itemid": itemid,
        "docname": _text(record.get("docname"), "docname"),
        "doctype": _text(record.get("doctype"), "doctype"),
        "language": _text(record.get("languageisocode"), "languageisocode"),
        "judgment_date": when,
        "appnos": split_list(record.get("appno"), "appno"),
        "articles": split_list(record.get("article"), "article"),
        "importance": _importance(record.get("importance")),
        "chamber": _text(record.get("doctypebranch"), "doctypebranch"),
        "respondents": split_list(record.get("respondent"), "respondent"),
        "ecli": _text(record.get("ecli"), "ecli"),
        "conclusion": _text(record.get("conclusion"), "conclusion"),
        "originating_body_code": code,
        "originating_body": body.get("name") or None,
        "originating_body_type": body.get("type"),
        "separate_opinion": _flag(record.get("separateopinion")),
        "is_placeholder": bool(_flag(record.get("isplaceholder"))),
        "application": _text(record.get("application"), "application"),
        "cited_case_law": _text(record.get("scl"), "scl"),
        "source_url": SOURCE_URL.format(itemid=itemid),
        "raw_sha256": raw_sha256,
    }


class TruncatedPage(ValueError):
    """A query-result page whose JSON does not parse."""


def records_from_payload(body: bytes) -> tuple[int | None, list[dict]]:
    """(resultcount, records) of a query-result page, a bare list of records, or one record.

    A body that is not JSON raises TruncatedPage; a JSON document that holds no records
    (e.g. a code table) gives (None, [])."""
    try:
        data = json.loads(body.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TruncatedPage(f"page is not valid JSON ({exc.__class__.__name__}: {exc})") from exc
    except RecursionError:
        raise TruncatedPage("page is JSON nested too deeply to read") from None
    if isinstance(data, dict) and "results" in data:
        results = data.get("results") or []
        if not isinstance(results, list):
            raise TruncatedPage(f"page's results is {_kind(results)}, not a list")
        records = [item.get("columns", item) if isinstance(item, dict) else item for item in results]
        count = data.get("resultcount")
        if count is not None and not (isinstance(count, int) and not isinstance(count, bool) or
                                      isinstance(count, str) and count.strip().isdigit()):
            raise TruncatedPage(f"page's resultcount {str(count)[:40]!r} is not a count")
        return (int(count) if count is not None else None), records
    if isinstance(data, list):
        return None, list(data)
    if isinstance(data, dict) and ("itemid" in data or "_id" in data):
        return None, [data]
    return None, []

