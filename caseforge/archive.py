"""ops.raw_payloads: an append-only, content-addressed archive of every upstream payload."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb

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
