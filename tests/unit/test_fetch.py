"""The shared fetch layer: retries, Retry-After, empty bodies, conditional GET, archive."""
import httpx
import pytest

from caseforge.archive import RawArchive
from caseforge.fetch import Fetcher, FetchError, HostRateLimiter, parse_retry_after
from caseforge.settings import Settings
from caseforge.warehouse.connection import connect


class ScriptedServerDouble:
    """Answers each request with the next scripted response and records what it was sent."""

    def __init__(self, *responses):
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        item = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(item, Exception):
            raise item
        return item


def make_fetcher(db_path, server, sleeps):
    con = connect(db_path)
    settings = Settings(db_path=db_path, requests_per_second=0, max_retries=3, backoff_base_s=1.0)
    fetcher = Fetcher(settings, RawArchive(con), transport=httpx.MockTransport(server), sleep=sleeps.append)
    fetcher.allow("oyez", "https://example.test")
    return fetcher, con


def test_500_then_success_is_retried_and_archived(db_path):
    server = ScriptedServerDouble(httpx.Response(500), httpx.Response(200, content=b'{"ok": 1}'))
    sleeps = []
    fetcher, con = make_fetcher(db_path, server, sleeps)
    result = fetcher.get("oyez", "k", "https://example.test/a", kind="case")
    assert result.payload.body == b'{"ok": 1}' and result.new_content
    assert len(server.requests) == 2 and fetcher.stats.retries == 1 and len(sleeps) == 1
    assert con.execute("SELECT count(*) FROM ops.raw_payloads").fetchone()[0] == 1


def test_429_waits_as_retry_after_says(db_path):
    server = ScriptedServerDouble(httpx.Response(429, headers={"Retry-After": "7"}), httpx.Response(200, content=b"x"))
    sleeps = []
    fetcher, _ = make_fetcher(db_path, server, sleeps)
    fetcher.get("oyez", "k", "https://example.test/a", kind="case")
    assert sleeps == [7.0]


def test_empty_200_and_timeouts_are_retried_then_given_up(db_path):
    server = ScriptedServerDouble(httpx.Response(200, content=b"  "), httpx.ReadTimeout("slow"))
    sleeps = []
    fetcher, _ = make_fetcher(db_path, server, sleeps)
    with pytest.raises(FetchError, match="gave up after 4 attempts: timeout"):
        fetcher.get("oyez", "k", "https://example.test/a", kind="case")
    assert len(server.requests) == 4
    assert sleeps[0] < sleeps[1] < sleeps[2]           # exponential backoff (with jitter below the base)


def test_404_is_not_retried(db_path):
    server = ScriptedServerDouble(httpx.Response(404))
    fetcher, _ = make_fetcher(db_path, server, [])
    with pytest.raises(FetchError) as info:
        fetcher.get("oyez", "k", "https://example.test/a", kind="case")
    assert info.value.status == 404 and len(server.requests) == 1


def test_conditional_get_reuses_the_archived_copy_on_304(db_path):
    server = ScriptedServerDouble(httpx.Response(200, content=b"body", headers={"ETag": '"v1"'}),
                                  httpx.Response(304))
    fetcher, con = make_fetcher(db_path, server, [])
    first = fetcher.get("oyez", "k", "https://example.test/a", kind="case")
    second = fetcher.get("oyez", "k", "https://example.test/a", kind="case")
    assert server.requests[1].headers["If-None-Match"] == '"v1"'
    assert second.not_modified and second.payload.body == first.payload.body
    assert con.execute("SELECT count(*) FROM ops.raw_payloads").fetchone()[0] == 1


def test_user_agent_is_sent(db_path):
    server = ScriptedServerDouble(httpx.Response(200, content=b"x"))
    fetcher, _ = make_fetcher(db_path, server, [])
    fetcher.get("oyez", "k", "https://example.test/a", kind="case")
    assert "caseforge" in server.requests[0].headers["User-Agent"]


def test_rate_limiter_spaces_requests_per_host():
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    limiter = HostRateLimiter(2.0, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        limiter.wait("a.test")
    limiter.wait("b.test")
    assert slept == [0.5, 0.5]


def test_retry_after_http_date():
    from datetime import datetime, timezone
    now = datetime(2026, 1, 1, 0, 0, 0, tzinfo=timezone.utc)
    assert parse_retry_after("Thu, 01 Jan 2026 00:00:30 GMT", now=now) == 30.0
    assert parse_retry_after("garbage") is None
