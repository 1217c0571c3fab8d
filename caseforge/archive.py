"""ops.raw_payloads: an append-only, content-addressed archive of every upstream payload."""
from __future__ import annotations

import hashlib
import os
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
    ("hudoc", "metadata"): 32,     # one query-result page or metadata file
    ("guides", "guide"): 64,       # one guide: PDF, form-feed text or page CSV
    ("cn", "dump"): 1024,          # one dump file (JSONL/JSON/CSV) or API response
    ("cn", "record"): 4,           # one judgment record inside a dump (a JSONL line, a CSV row)
    ("barexam", "file"): 1024,     # barexam_qa.csv or a passages_*.jsonl
    ("barexam", "record"): 1,      # one question row or passage line
}


def size_limit_variable(source: str, kind: str) -> str:
    return f"CASEFORGE_MAX_MB_{source.upper()}_{kind.upper()}"


def size_limit_bytes(source: str, kind: str) -> int:
    """The limit in bytes: the environment's CASEFORGE_MAX_MB_<SOURCE>_<KIND>, else the default."""
    name = size_limit_variable(source, kind)
    raw = os.environ.get(name, "").strip()
    if raw:
        try:
            megabytes = float(raw)
        except ValueError as exc:
            raise ValueError(f"{name} must be a number of megabytes, got {raw!r}") from exc
    else:
        megabytes = SIZE_LIMITS_MB[(source, kind)]
    return int(round(megabytes * MB))


def _megabytes(size: int) -> str:
    return f"{size / MB:.1f} MB" if size >= MB / 10 else f"{size:,} bytes"


def size_problem(source: str, kind: str, size: int) -> str | None:
    """Why an input of `size` bytes is refused before parsing, or None when it is within the limit."""
    limit = size_limit_bytes(source, kind)
    if size <= limit:
        return None
    return (f"{_megabytes(size)} is over the {source} {kind} limit of {_megabytes(limit)} "
            f"(set {size_limit_variable(source, kind)} to raise it); not parsed")


def payload_origin(payload: Payload) -> str:
    """Where a payload came from, for a one-line problem: its archive key, plus the file name of a replayed file
    when the key does not already say it."""
    url = payload.url or ""
    if url.startswith("file:"):
        name = Path(unquote(urlparse(url).path)).name
        if name and name not in payload.key:
            return f"{payload.key} (file {name})"
    return payload.key
