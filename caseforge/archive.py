"""ops.raw_payloads: an append-only, content-addressed archive of every upstream payload."""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import unquote, urlparse

import duckdb

from caseforge.runs import check_stop
from caseforge.warehouse import run_sql


def sha256_hex(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


@dataclass(frozen=True)
class Payload:
    source: str
    key: str
    url: str | None
    http_status: int | None
    content_type: str | None
    body: bytes
    sha256: str
    fetched_at: datetime


class RawArchive:
    """Stores payloads once per (source, key, content); never updates or deletes."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con

    def store(
        self,
        source: str,
        key: str,
        body: bytes,
        url: str | None = None,
        http_status: int | None = 200,
        content_type: str | None = None,
    ) -> tuple[Payload, bool]:
        """Archive a body; returns the payload and whether this content was new for the key."""
        check_stop()                     # every payload is a point where a run told to stop does stop
        digest = sha256_hex(body)
        now = datetime.now(timezone.utc)
        before = run_sql(self.con, "ops/payload_stored.sql", [source, key, digest]).fetchone()[0]
        if not before:
            run_sql(self.con, "ops/store_payload.sql",
                    [source, key, digest, url, now, http_status, content_type, body])
        payload = Payload(source, key, url, http_status, content_type, body, digest, now)
        return payload, not before

    def store_file(self, source: str, key: str, path: Path, content_type: str | None = None) -> tuple[Payload, bool]:
        return self.store(source, key, path.read_bytes(), url=path.resolve().as_uri(), content_type=content_type)

    def latest(self, source: str, key: str) -> Payload | None:
        row = run_sql(self.con, "ops/latest_payload.sql", [source, key]).fetchone()
        if row is None:
            return None
        return Payload(row[0], row[1], row[2], row[3], row[4], bytes(row[5]), row[6], row[7])

    def by_sha(self, sha256: str) -> Payload | None:
        row = run_sql(self.con, "ops/payload_by_sha.sql", [sha256]).fetchone()
        if row is None:
            return None
        return Payload(row[0], row[1], row[2], row[3], row[4], bytes(row[5]), row[6], row[7])


# ---- size limits: what one upstream file or record may weigh before a parser is allowed to read it ----

MB = 1024 * 1024
# (source, kind) -> default limit in MB; each is overridden by CASEFORGE_MAX_MB_<SOURCE>_<KIND> (README).
# The defaults sit far above the largest real input and far below what would choke a parser or the
# warehouse: the largest sample Oyez case detail is 71 KB, a long Grand Chamber judgment a few MB.
SIZE_LIMITS_MB: dict[tuple[str, str], float] = {
    ("oyez", "case"): 2,           # one case-detail JSON
    ("oyez", "list"): 64,          # the /cases list of every term (~8,400 summaries)
    ("oyez", "legacy"): 64,        # the legacy justice table CSV
    ("hudoc", "body"): 32,         # one judgment body, HTML or DOCX
    ("hudoc", "docx_part"): 64,    # one part of a DOCX body once inflated (word/document.xml of 001-175180: 0.5 MB)
    ("hudoc", "metadata"): 32,     # one query-result page or metadata file
    ("guides", "guide"): 64,       # one guide: PDF, form-feed text or page CSV
    ("cn", "dump"): 1024,          # one dump file (JSONL/JSON/CSV) or API response
    ("cn", "record"): 4,           # one judgment record inside a dump (a JSONL line, a CSV row)
    ("barexam", "file"): 1024,     # barexam_qa.csv or a passages_*.jsonl
    ("barexam", "record"): 1,      # one question row or passage line
}


def size_limit_variable(source: str, kind: str) -> str:
    return f"CASEFORGE_MAX_MB_{source.upper()}_{kind.upper()}"


def _env_number(name: str, default: float, unit: str) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a number of {unit}, got {raw!r}") from exc


def size_limit_bytes(source: str, kind: str) -> int:
    """The limit in bytes: the environment's CASEFORGE_MAX_MB_<SOURCE>_<KIND>, else the default."""
    megabytes = _env_number(size_limit_variable(source, kind), SIZE_LIMITS_MB[(source, kind)], "megabytes")
    return int(round(megabytes * MB))


def _megabytes(size: int) -> str:
    return f"{size / MB:.1f} MB" if size >= MB / 10 else f"{size:,} bytes"


def size_limit_text(source: str, kind: str) -> str:
    """'the oyez case limit of 2.0 MB (set CASEFORGE_MAX_MB_OYEZ_CASE to raise it)'."""
    return (f"the {source} {kind} limit of {_megabytes(size_limit_bytes(source, kind))} "
            f"(set {size_limit_variable(source, kind)} to raise it)")


def size_problem(source: str, kind: str, size: int, action: str = "not parsed") -> str | None:
    """Why an input of `size` bytes is refused before parsing, or None when it is within the limit."""
    if size <= size_limit_bytes(source, kind):
        return None
    return f"{_megabytes(size)} is over {size_limit_text(source, kind)}; {action}"


def payload_origin(payload: Payload) -> str:
    """Where a payload came from, for a one-line problem: its archive key, plus the file name of a replayed file
    when the key does not already say it."""
    url = payload.url or ""
    if url.startswith("file:"):
        name = Path(unquote(urlparse(url).path)).name
        if name and name not in payload.key:
            return f"{payload.key} (file {name})"
    return payload.key


# ---- what one document may expand to once it is read: checked before and while it is parsed ----

# (source, kind) -> most markup elements in one document; CASEFORGE_MAX_ELEMENTS_<SOURCE>_<KIND> (README).
# Malyy's HTML body has 3,215 start tags, the DOCX of 001-175180 14,202 elements; a million tiny paragraphs
# took BeautifulSoup 95 s here (over 500 s and 1.7 GB on a loaded machine).
ELEMENT_LIMITS: dict[tuple[str, str], int] = {
    ("hudoc", "body"): 200_000,
}
# (source, kind) -> seconds one document may take to parse; CASEFORGE_MAX_PARSE_S_<SOURCE>_<KIND> (README).
# A long judgment or Chinese record parses in well under a second.
PARSE_BUDGETS_S: dict[tuple[str, str], float] = {
    ("hudoc", "body"): 60,
    ("cn", "record"): 30,
}
# A DOCX part over 1 MB that inflates more than this many times its compressed size is refused unread
# (CASEFORGE_MAX_ZIP_RATIO): real parts inflate 30 times at most, deflate can reach 1,032.
ZIP_RATIO_LIMIT = 100
ZIP_RATIO_FROM_BYTES = MB


class LimitExceeded(ValueError):
    """A document refused because reading it would go past one of these limits; the message names the limit
    and the setting that raises it."""


def element_limit(source: str, kind: str) -> int:
    return int(_env_number(f"CASEFORGE_MAX_ELEMENTS_{source.upper()}_{kind.upper()}",
                           ELEMENT_LIMITS[(source, kind)], "elements"))


def element_problem(source: str, kind: str, count: int) -> str | None:
    """Why a document of `count` markup elements is refused before parsing, or None."""
    limit = element_limit(source, kind)
    if count <= limit:
        return None
    return (f"{count:,} elements is over the {source} {kind} limit of {limit:,} "
            f"(set CASEFORGE_MAX_ELEMENTS_{source.upper()}_{kind.upper()} to raise it); not parsed")


def zip_ratio_limit() -> float:
    return _env_number("CASEFORGE_MAX_ZIP_RATIO", ZIP_RATIO_LIMIT, "times")


class ParseBudget:
    """The parse-time budget of one document (CASEFORGE_MAX_PARSE_S_<SOURCE>_<KIND>), started when made and
    checked by the reader between the stages of its reading: a stage is not interrupted (the size and element
    limits bound each one), but a document that has taken too long is refused instead of going on."""

    def __init__(self, source: str, kind: str, clock=time.monotonic):
        self.source, self.kind, self.clock = source, kind, clock
        self.variable = f"CASEFORGE_MAX_PARSE_S_{source.upper()}_{kind.upper()}"
        self.seconds = _env_number(self.variable, PARSE_BUDGETS_S[(source, kind)], "seconds")
        self.started = clock()

    def check(self, stage: str) -> None:
        """LimitExceeded when the document has taken longer than its budget by the end of `stage`."""
        elapsed = self.clock() - self.started
        if self.seconds > 0 and elapsed > self.seconds:
            raise LimitExceeded(f"parsing took {elapsed:.1f} s by the end of {stage}, over the {self.source} "
                                f"{self.kind} parse-time budget of {self.seconds:g} s (set {self.variable} "
                                "to raise it)")
