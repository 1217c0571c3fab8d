"""The one HTTP client every source uses: polite, retrying, conditional, archiving, and distrustful.

Upstream answers are untrusted. A request goes only to a host the settings name for its source (the origin,
scheme://host:port, of `[upstream] <source>`, or of a URL a source adds with Fetcher.allow); every URL, one
taken from an answer or a redirect included, is checked before it is requested, and anything else is refused
(RefusedURL, with the URL in its reason) without being requested. Redirects are followed here, never by httpx
(which follows them anywhere). A body is read as it streams and refused once it passes its size limit
(BodyTooLarge); a request that has not delivered its whole answer within Settings.fetch_deadline_s ends as a
timeout, however slowly the bytes trickle in.
"""
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

from caseforge.archive import Payload, RawArchive, size_limit_bytes, size_limit_text, size_problem
from caseforge.settings import Settings
from caseforge.warehouse.statements import run_sql

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504}) | frozenset(range(505, 600))
MAX_RETRY_AFTER_S = 300.0
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
DEFAULT_PORTS = {"http": 80, "https": 443}


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


class RefusedURL(FetchError):
    """A request not made: its URL (given, taken from an answer, or a redirect's target) is not on a host the
    settings allow for its source."""


class BodyTooLarge(FetchError):
    """An answer refused while it streamed (or by its declared length): over its size limit. Not retried."""


class DeadlinePassed(httpx.TimeoutException):
    """A request that had not delivered its whole answer within Settings.fetch_deadline_s."""


Origin = tuple[str, str, int]


def origin_of(url: str | httpx.URL) -> Origin | None:
    """(scheme, host, port) of an http(s) URL; None for anything else."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return None
    if parsed.scheme not in DEFAULT_PORTS or not parsed.host:
        return None
    return parsed.scheme, parsed.host, parsed.port or DEFAULT_PORTS[parsed.scheme]


def _shown(origin: Origin) -> str:
    scheme, host, port = origin
    return f"{scheme}://{host}" + ("" if DEFAULT_PORTS[scheme] == port else f":{port}")


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
    to that host until the fetcher is closed): caseforge.flows.wiring.install puts one in that takes a slot of
    the Prefect global concurrency limit `upstream-<host>` when running inside a Prefect run against a
    server. None puts back the default (no slot)."""
    global _host_slot
    _host_slot = acquire or _no_slot


@dataclass
class _Answer:
    status: int
    headers: httpx.Headers
    body: bytes


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
            follow_redirects=False,
            headers={"User-Agent": settings.user_agent, "Accept-Encoding": "gzip, deflate"},
        )
        # source -> the origins its requests may go to: every [upstream] base URL of the settings it was handed
        self.allowed: dict[str, set[Origin]] = {}
        for source, base in settings.file.upstream.base_urls().items():
            self.allow(source, base)

    def allow(self, source: str, url: str) -> None:
        """Let `source` request the origin (scheme://host:port) of `url`, e.g. an endpoint its settings name."""
        found = origin_of(url)
        if found is None:
            raise ValueError(f"{source}: {url!r} is not an http(s) URL with a host")
        self.allowed.setdefault(source, set()).add(found)

    def _check_allowed(self, source: str, url: str, redirected_from: str | None = None) -> None:
        """RefusedURL unless `url` is on an origin allowed for `source` (https on the host of an allowed
        http origin is, too)."""
        allowed = self.allowed.get(source)
        if not allowed:
            raise RefusedURL(url, f"{url} refused: no allowed host for source {source} (set [upstream] {source} "
                                  "in the settings); not requested")
        found = origin_of(url)
        if found in allowed or (found and found[0] == "https" and found[2] == 443
                                and ("http", found[1], 80) in allowed):
            return
        where = "not an http(s) URL" if found is None else f"{_shown(found)} is not an allowed host for {source}"
        what = f"redirect to {url} refused" if redirected_from else f"{url} refused"
        raise RefusedURL(url, f"{what}: {where} (allowed: {', '.join(sorted(_shown(o) for o in allowed))}, "
                              f"from [upstream] {source}); not requested")

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

    def _save_validators(self, url: str, headers: httpx.Headers, sha256: str) -> None:
        etag = headers.get("ETag")
        last_modified = headers.get("Last-Modified")
        if not etag and not last_modified:
            return
        run_sql(self.archive.con, "ops/store_http_validators.sql",
                [url, etag, last_modified, sha256, datetime.now(timezone.utc)])

    def get(self, source: str, key: str, url: str, params: dict | None = None, conditional: bool = True, *,
            kind: str) -> FetchResult:
        """GET url, retrying transient failures; archive the body under (source, key). The URL must be on a
        host allowed for `source` (RefusedURL); the body may weigh at most the (source, kind) size limit
        (BodyTooLarge; the limits are caseforge.settings.Settings.max_mb_*)."""
        full_url = str(httpx.URL(url, params=params)) if params else url
        try:
            self._check_allowed(source, full_url)
        except RefusedURL:
            self.stats.failures += 1
            raise
        limit = size_limit_bytes(source, kind)
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
            wait = None
            try:
                answer = self._exchange(source, kind, full_url, headers, limit)
            except (RefusedURL, BodyTooLarge):
                self.stats.failures += 1
                raise
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last_reason = (str(exc) if isinstance(exc, DeadlinePassed)
                               else f"timeout ({type(exc).__name__})" if isinstance(exc, httpx.TimeoutException)
                               else f"transport error: {exc}")
                wait = self._backoff(attempt) if attempt + 1 < attempts else 0.0
                down = self._connection_failed(host, last_reason, wait)
                if down:
                    self.stats.failures += 1
                    raise HostUnreachable(full_url, host, down) from exc
            else:
                self._answered(host)
                status = answer.status
                self.stats.by_status[status] = self.stats.by_status.get(status, 0) + 1
                if status == 304 and archived is not None:
                    self.stats.not_modified += 1
                    return FetchResult(archived, new_content=False, not_modified=True)
                if status == 200 and answer.body.strip():
                    self.stats.bytes_downloaded += len(answer.body)
                    payload, new = self.archive.store(
                        source, key, answer.body, url=full_url, http_status=status,
                        content_type=answer.headers.get("Content-Type"),
                    )
                    self._save_validators(full_url, answer.headers, payload.sha256)
                    return FetchResult(payload, new_content=new, not_modified=False)
                if status == 200:
                    last_reason = "empty 200 body"
                elif status in RETRY_STATUSES:
                    last_reason = f"HTTP {status}"
                    wait = parse_retry_after(answer.headers.get("Retry-After"))
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

    def _exchange(self, source: str, kind: str, url: str, headers: dict, limit: int) -> _Answer:
        """One attempt: the request and the redirects it leads to (each target checked first), under one
        deadline; the body of a 200 read as it streams, within `limit` bytes."""
        started = self.clock()
        for _ in range(MAX_REDIRECTS + 1):
            host = urlsplit(url).netloc
            self._hold_slot(urlsplit(url).hostname or host)
            self.limiter.wait(host)
            self.stats.requests += 1
            with self.client.stream("GET", url, headers=headers) as response:
                location = response.headers.get("Location")
                if response.status_code in REDIRECT_STATUSES and location:
                    target = str(response.url.join(location))
                    self._check_allowed(source, target, redirected_from=url)
                    url = target
                    continue
                body = self._body(response, source, kind, limit, started) if response.status_code == 200 else b""
                return _Answer(response.status_code, response.headers, body)
        raise FetchError(url, f"more than {MAX_REDIRECTS} redirects")

    def _body(self, response: httpx.Response, source: str, kind: str, limit: int, started: float) -> bytes:
        url = str(response.url)
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge(url, size_problem(source, kind, int(declared), action="not fetched"))
        deadline = self.settings.fetch_deadline_s
        chunks, size = [], 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(url, f"answer over {size_limit_text(source, kind)}: stopped reading after "
                                        f"{size:,} bytes; not fetched")
            if deadline > 0 and self.clock() - started > deadline:
                raise DeadlinePassed(f"no complete answer within {deadline:g} s (CASEFORGE_FETCH_DEADLINE_S): "
                                     f"{size:,} bytes had arrived", request=response.request)
            chunks.append(chunk)
        return b"".join(chunks)
