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
        doctype = str(record.get("doctype") or "").strip().upper()
        language = str(record.get("languageisocode") or "").strip().upper()
        return (not self.doctypes or doctype in self.doctypes) and (not self.languages or language in self.languages)


@lru_cache(maxsize=1)
def originating_bodies() -> dict[str, dict]:
    path = Path(__file__).with_name("originating_bodies.json")
    return json.loads(path.read_text(encoding="utf-8"))["codes"]


def split_list(value) -> list[str]:
    """A ';'-separated HUDOC field (or an already split list) as a clean list, order kept, no repeats."""
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else str(value).split(";")
    out: list[str] = []
    for item in items:
        text = str(item).strip()
        if text and text.upper() != "NULL" and text not in out:
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


def _text(value) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def judgment_date(record: dict) -> date | None:
    for field in ("kpdate", "judgementdate", "kpdateAsText"):
        if record.get(field):
            return parse_hudoc_date(record[field])
    return None


def parse_record(record: dict, raw_sha256: str) -> dict:
    """One HUDOC `columns` record as a judgment row; MetadataError when it has no usable itemid or date."""
    itemid = _text(record.get("itemid") or record.get("_id"))
    if not itemid or not ITEMID_RE.match(itemid):
        raise MetadataError(f"record without a valid itemid: {itemid!r}")
    when = judgment_date(record)
    if when is None:
        raise MetadataError(f"{itemid}: no kpdate/judgementdate")
    importance = _text(record.get("importance"))
    try:
        importance_value = int(float(importance)) if importance else None
    except ValueError as exc:
        raise MetadataError(f"{itemid}: importance {importance!r} is not a number") from exc
    code = _text(record.get("originatingbody"))
    body = originating_bodies().get(code or "", {})
    return {
        "itemid": itemid,
        "docname": _text(record.get("docname")),
        "doctype": _text(record.get("doctype")),
        "language": _text(record.get("languageisocode")),
        "judgment_date": when,
        "appnos": split_list(record.get("appno")),
        "articles": split_list(record.get("article")),
        "importance": importance_value,
        "chamber": _text(record.get("doctypebranch")),
        "respondents": split_list(record.get("respondent")),
        "ecli": _text(record.get("ecli")),
        "conclusion": _text(record.get("conclusion")),
        "originating_body_code": code,
        "originating_body": body.get("name") or None,
        "originating_body_type": body.get("type"),
        "separate_opinion": _flag(record.get("separateopinion")),
        "is_placeholder": bool(_flag(record.get("isplaceholder"))),
        "application": _text(record.get("application")),
        "cited_case_law": _text(record.get("scl")),
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
    if isinstance(data, dict) and "results" in data:
        results = data.get("results") or []
        records = [item.get("columns", item) for item in results if isinstance(item, dict)]
        count = data.get("resultcount")
        return (int(count) if count is not None else None), records
    if isinstance(data, list):
        return None, [item for item in data if isinstance(item, dict)]
    if isinstance(data, dict) and ("itemid" in data or "_id" in data):
        return None, [data]
    return None, []

