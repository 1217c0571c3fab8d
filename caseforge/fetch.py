"""The one HTTP client every source uses: polite, retrying, conditional, archiving."""
from __future__ import annotations

import contextlib
import email.utils
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Callable, ContextManager
from datetime import datetime, timezone
from urllib.parse import urlsplit

import httpx

from caseforge.archive import Payload, RawArchive
from caseforge.config import Settings
from caseforge.warehouse import run_sql

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504}) | frozenset(range(505, 600))
MAX_RETRY_AFTER_S = 300.0


class FetchError(RuntimeError):
    """A request that failed for good (after retries, or with a status not worth retrying)."""

    def __init__(self, url: str, reason: str, status: int | None = None):
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason
        self.status = status


class HostUnreachable(FetchError):
    """A request not made: its host failed too many connection attempts in a row during this fetcher's run
    (Settings.host_max_failures / host_failure_budget_s), so its remaining requests fail at once."""

    def __init__(self, url: str, host: str, reason: str):
        super().__init__(url, reason)
        self.host = host


@dataclass
class HostHealth:
    """The current streak of connection failures (no HTTP answer at all) against one host."""
    failures: int = 0
    since: float | None = None          # clock reading at the first failure of the streak
    down: str | None = None             # why the host was given up (then every request to it fails at once)


# --- a slot per upstream host, shared by every process (installed by the orchestrator) ---

def _no_slot(host: str) -> ContextManager:
    return contextlib.nullcontext()


_host_slot: Callable[[str], ContextManager] = _no_slot


def install_host_slots(acquire: Callable[[str], ContextManager] | None) -> None:
    """`acquire(host)` → a context manager held while a fetcher talks to that host (from its first request
    to that host until the fetcher is closed): caseforge.flows.common installs one that takes a slot of
    the Prefect global concurrency limit `upstream-<host>` when running inside a Prefect run against a
    server. None puts back the default (no slot)."""
    global _host_slot
    _host_slot = acquire or _no_slot


@dataclass
class FetchResult:
    payload: Payload
    new_content: bool      # the archive had not seen this body for this key
    not_modified: bool     # the server answered 304 and the archived copy was reused


@dataclass
class FetchStats:
    requests: int = 0
    retries: int = 0
    not_modified: int = 0
    bytes_downloaded: int = 0
    failures: int = 0
    by_status: dict[int, int] = field(default_factory=dict)


class HostRateLimiter:
    """At most `rate` requests per second to each host."""

    def __init__(self, rate: float, clock=time.monotonic, sleep=time.sleep):
        self.interval = 0.0 if rate <= 0 else 1.0 / rate
        self.clock = clock
        self.sleep = sleep
        self._next: dict[str, float] = {}

    def wait(self, host: str) -> None:
        now = self.clock()
        ready = self._next.get(host, now)
        if ready > now:
            self.sleep(ready - now)
            now = ready
        self._next[host] = now + self.interval


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER_S)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    delta = (when - (now or datetime.now(timezone.utc))).total_seconds()
    return min(max(delta, 0.0), MAX_RETRY_AFTER_S)


class Fetcher:
    def __init__(
        self,
        settings: Settings,
        archive: RawArchive,
        transport: httpx.BaseTransport | None = None,
        sleep=time.sleep,
        rng: random.Random | None = None,
        clock=time.monotonic,
    ):
        self.settings = settings
        self.archive = archive
        self.sleep = sleep
        self.clock = clock
        self.hosts: dict[str, HostHealth] = {}
        self._slots = contextlib.ExitStack()
        self._slotted: set[str] = set()
        self.rng = rng or random.Random()
        self.stats = FetchStats()
        self.limiter = HostRateLimiter(settings.requests_per_second, sleep=sleep)
        self.client = httpx.Client(
            transport=transport,
            timeout=settings.timeout_s,
            follow_redirects=True,
            headers={"User-Agent": settings.user_agent, "Accept-Encoding": "gzip, deflate"},
        )

    def close(self) -> None:
        try:
            self._slots.close()
        finally:
            self.client.close()

    def _hold_slot(self, host: str) -> None:
        """Take the host's shared slot before the first request to it; held until close()."""
        if host not in self._slotted:
            self._slotted.add(host)
            self._slots.enter_context(_host_slot(host))

    def _connection_failed(self, host: str, reason: str, upcoming_s: float = 0.0) -> str | None:
        """Count a connection failure against `host`; the reason it is now given up, or None. `upcoming_s`:
        the backoff about to be slept, counted against the time budget (no sleep past it)."""
        health = self.hosts.setdefault(host, HostHealth())
        now = self.clock()
        health.failures += 1
        if health.since is None:
            health.since = now
        elapsed = now - health.since
        limit, budget = self.settings.host_max_failures, self.settings.host_failure_budget_s
        if (limit > 0 and health.failures >= limit) or (budget > 0 and elapsed + upcoming_s >= budget):
            health.down = (f"host {host} unreachable: {health.failures} connection attempt(s) in a row failed "
                           f"over {elapsed:.0f} s (last: {reason}); its remaining requests are not made "
                           "(CASEFORGE_HOST_MAX_FAILURES / CASEFORGE_HOST_FAILURE_BUDGET_S)")
            log.warning("%s", health.down)
        return health.down

    def _answered(self, host: str) -> None:
        health = self.hosts.get(host)
        if health is not None and health.down is None:
            health.failures, health.since = 0, None

    def __enter__(self) -> "Fetcher":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _backoff(self, attempt: int) -> float:
        base = self.settings.backoff_base_s * (2**attempt)
        return base + self.rng.uniform(0, self.settings.backoff_base_s)

    def _validators(self, url: str) -> tuple[str | None, str | None]:
        row = run_sql(self.archive.con, "ops/http_validators.sql", [url]).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def _save_validators(self, url: str, response: httpx.Response, sha256: str) -> None:
        etag = response.headers.get("ETag")
        last_modified = response.headers.get("Last-Modified")
        if not etag and not last_modified:
            return
        run_sql(self.archive.con, "ops/store_http_validators.sql",
                [url, etag, last_modified, sha256, datetime.now(timezone.utc)])

    def get(self, source: str, key: str, url: str, params: dict | None = None, conditional: bool = True) -> FetchResult:
        """GET url, retrying transient failures; archive the body under (source, key)."""
        full_url = str(httpx.URL(url, params=params)) if params else url
        headers = {}
        archived = None
        if conditional:
            etag, last_modified = self._validators(full_url)
            archived = self.archive.latest(source, key) if (etag or last_modified) else None
            if archived is not None:
                if etag:
                    headers["If-None-Match"] = etag
                if last_modified:
                    headers["If-Modified-Since"] = last_modified
        host = urlsplit(full_url).netloc
        attempts = self.settings.max_retries + 1
        last_reason = "no attempt made"
        for attempt in range(attempts):
            down = self.hosts.get(host, HostHealth()).down
            if down:
                self.stats.failures += 1
                raise HostUnreachable(full_url, host, down)
            self._hold_slot(urlsplit(full_url).hostname or host)
            self.limiter.wait(host)
            self.stats.requests += 1
            wait = None
            try:
                response = self.client.get(full_url, headers=headers)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last_reason = (f"timeout ({type(exc).__name__})" if isinstance(exc, httpx.TimeoutException)
                               else f"transport error: {exc}")
                wait = self._backoff(attempt) if attempt + 1 < attempts else 0.0
                down = self._connection_failed(host, last_reason, wait)
                if down:
                    self.stats.failures += 1
                    raise HostUnreachable(full_url, host, down) from exc
            else:
                self._answered(host)
                status = response.status_code
                self.stats.by_status[status] = self.stats.by_status.get(status, 0) + 1
                if status == 304 and archived is not None:
                    self.stats.not_modified += 1
                    return FetchResult(archived, new_content=False, not_modified=True)
                if status == 200 and response.content.strip():
                    body = response.content
                    self.stats.bytes_downloaded += len(body)
                    payload, new = self.archive.store(
                        source, key, body, url=full_url, http_status=status,
                        content_type=response.headers.get("Content-Type"),
                    )
                    self._save_validators(full_url, response, payload.sha256)
                    return FetchResult(payload, new_content=new, not_modified=False)
                if status == 200:
                    last_reason = "empty 200 body"
                elif status in RETRY_STATUSES:
                    last_reason = f"HTTP {status}"
                    wait = parse_retry_after(response.headers.get("Retry-After"))
                else:
                    self.stats.failures += 1
                    raise FetchError(full_url, f"HTTP {status}", status=status)
            if attempt + 1 < attempts:
                self.stats.retries += 1
                delay = wait if wait is not None else self._backoff(attempt)
                log.info("retrying %s in %.1fs after %s", full_url, delay, last_reason)
                self.sleep(delay)
        self.stats.failures += 1
        raise FetchError(full_url, f"gave up after {attempts} attempts: {last_reason}")
