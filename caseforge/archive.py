"""ops.raw_payloads: an append-only, content-addressed archive of every upstream payload."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb


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
        before = self.con.execute(
            "SELECT count(*) FROM ops.raw_payloads WHERE source = ? AND key = ? AND sha256 = ?",
            [source, key, digest],
        ).fetchone()[0]
        if not before:
            self.con.execute(
                "INSERT INTO ops.raw_payloads (source, key, sha256, url, fetched_at, http_status, content_type, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [source, key, digest, url, now, http_status, content_type, body],
            )
        payload = Payload(source, key, url, http_status, content_type, body, digest, now)
        return payload, not before

    def store_file(self, source: str, key: str, path: Path, content_type: str | None = None) -> tuple[Payload, bool]:
        return self.store(source, key, path.read_bytes(), url=path.resolve().as_uri(), content_type=content_type)

    def latest(self, source: str, key: str) -> Payload | None:
        row = self.con.execute(
            "SELECT source, key, url, http_status, content_type, body, sha256, fetched_at FROM ops.raw_payloads "
            "WHERE source = ? AND key = ? ORDER BY fetched_at DESC LIMIT 1",
            [source, key],
        ).fetchone()
        if row is None:
            return None
        return Payload(row[0], row[1], row[2], row[3], row[4], bytes(row[5]), row[6], row[7])

    def by_sha(self, sha256: str) -> Payload | None:
        row = self.con.execute(
            "SELECT source, key, url, http_status, content_type, body, sha256, fetched_at FROM ops.raw_payloads "
            "WHERE sha256 = ? LIMIT 1",
            [sha256],
        ).fetchone()
        if row is None:
            return None
        return Payload(row[0], row[1], row[2], row[3], row[4], bytes(row[5]), row[6], row[7])
