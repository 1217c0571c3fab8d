"""Upstream answers are untrusted: a URL taken from an answer or a redirect is requested only on a host the
settings name for that source; a body is size-checked while it streams; a request has an overall deadline.
Real loopback servers (tests/upstream_doubles.py), no network; each test ends within seconds."""
import json

import httpx
import pytest
from upstream_doubles import LoopbackUpstreamDouble, Route

from caseforge.archive import RawArchive
from caseforge.fetch import Fetcher, FetchError
from caseforge.settings import Settings, overriding
from caseforge.tasks.oyez import ingest as oyez
from caseforge.warehouse.connection import connect
from warehouse_rows import rows as table


def case(base: str, docket: str) -> dict:
    return {"ID": int(docket.split("-")[1]), "name": f"A v. B {docket}", "term": "1999", "docket_number": docket,
            "href": f"{base}/cases/1999/{docket}", "timeline": []}


def oyez_upstream(cases: list[dict], details: dict[str, Route] | None = None) -> dict[str, Route]:
    """Routes of an Oyez double: the case list, and each case's detail unless `details` says otherwise."""
    routes = {"/cases": Route(body=json.dumps(cases).encode())}
    for item in cases:
        path = "/" + item["href"].split("/", 3)[3]
        routes[path] = Route(body=json.dumps(item).encode())
    routes.update(details or {})
    return routes


def refresh_against(db_path, upstream: LoopbackUpstreamDouble, **settings):
    options = dict(db_path=db_path, requests_per_second=0, max_retries=0, backoff_base_s=0, timeout_s=5)
    options.update(settings)
    with overriding({"upstream": {"oyez": upstream.url}}):
        return oyez.refresh(Settings(**options), sleep=lambda s: None)


def fetch_quarantine(db_path) -> dict[str, str]:
    return dict(table(db_path, "SELECT source_key, reason FROM ops.quarantine WHERE stage = 'fetch'"))


def test_a_case_list_pointing_at_another_loopback_port_is_refused_unrequested_and_recorded(db_path):
    """The issue's SSRF case: the Oyez list names a case whose href is an internal service on another port."""
    with LoopbackUpstreamDouble({"/internal/admin/secret": Route(body=b'{"ID": 9, "name": "secret"}')}) as internal, \
            LoopbackUpstreamDouble() as upstream:
        secret = f"{internal.url}/internal/admin/secret"
        listed = [case(upstream.url, "1-1"), {**case(upstream.url, "1-2"), "href": secret}]
        upstream.routes.update(oyez_upstream(listed[:1]))
        upstream.routes["/cases"] = Route(body=json.dumps(listed).encode())
        report = refresh_against(db_path, upstream)
    assert internal.requests == []
    assert table(db_path, "SELECT name FROM curated.scotus_cases") == [("A v. B 1-1",)]
    reason = fetch_quarantine(db_path)["admin/secret"]
    assert secret in reason and "not an allowed host for oyez" in reason and "[upstream] oyez" in reason
    assert report.status == "failed" and any(secret in line for line in report.failures), report.failures


def test_a_redirect_is_followed_only_to_an_allowed_host(db_path):
    with LoopbackUpstreamDouble({"/internal": Route(body=b"{}")}) as internal, LoopbackUpstreamDouble() as upstream:
        listed = [case(upstream.url, "1-1"), case(upstream.url, "1-2")]
        upstream.routes.update(oyez_upstream(listed, {
            "/cases/1999/1-1": Route(302, headers={"Location": "/moved/1-1"}),          # same host: followed
            "/moved/1-1": Route(body=json.dumps(listed[0]).encode()),
            "/cases/1999/1-2": Route(302, headers={"Location": f"{internal.url}/internal"}),
        }))
        report = refresh_against(db_path, upstream)
    assert internal.requests == []
    assert "/moved/1-1" in upstream.requests
    assert table(db_path, "SELECT name FROM curated.scotus_cases") == [("A v. B 1-1",)]
    reason = fetch_quarantine(db_path)["1999/1-2"]
    assert f"redirect to {internal.url}/internal refused" in reason, reason
    assert report.status == "failed"


def test_a_body_over_the_limit_is_refused_while_it_streams(db_path, monkeypatch):
    """A 256 MB chunked answer (no Content-Length) to a case request whose limit is 1 MB: the client stops
    reading soon after the first MB instead of reading it whole and refusing it afterwards. What the server
    got rid of also counts what the kernel buffered for the client (loopback buffers grow to 32 + 4 MB here)."""
    monkeypatch.setenv("CASEFORGE_MAX_MB_OYEZ_CASE", "1")

    def endless():
        chunk = b"x" * 65536
        for _ in range(4096):
            yield chunk

    with LoopbackUpstreamDouble() as upstream:
        listed = [case(upstream.url, "1-1"), case(upstream.url, "1-2")]
        upstream.routes.update(oyez_upstream(listed, {"/cases/1999/1-2": Route(body=endless)}))
        refresh_against(db_path, upstream)
        sent = upstream.sent_bytes["/cases/1999/1-2"]
    assert sent < 48 * 1024 * 1024, sent
    assert table(db_path, "SELECT name FROM curated.scotus_cases") == [("A v. B 1-1",)]
    reason = fetch_quarantine(db_path)["1999/1-2"]
    assert "over the oyez case limit of 1.0 MB" in reason and "CASEFORGE_MAX_MB_OYEZ_CASE" in reason, reason
    assert table(db_path, "SELECT count(*) FROM ops.raw_payloads WHERE key = '1999/1-2'") == [(0,)]


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_read(db_path, monkeypatch):
    monkeypatch.setenv("CASEFORGE_MAX_MB_OYEZ_CASE", "1")
    with LoopbackUpstreamDouble() as upstream:
        listed = [case(upstream.url, "1-1")]
        upstream.routes.update(oyez_upstream(listed, {"/cases/1999/1-1": Route(body=b"x" * (3 * 1024 * 1024))}))
        refresh_against(db_path, upstream)
    reason = fetch_quarantine(db_path)["1999/1-1"]
    assert "3.0 MB is over the oyez case limit of 1.0 MB" in reason, reason


def test_a_drip_fed_body_ends_at_the_request_deadline(db_path, monkeypatch):
    """One byte every 0.2 s never trips the 5 s per-read timeout; the 1 s deadline per request ends it."""
    monkeypatch.setenv("CASEFORGE_FETCH_DEADLINE_S", "1")
    body = json.dumps(case("http://x", "1-1")).encode()

    def drip():
        for byte in body:
            yield bytes([byte])

    with LoopbackUpstreamDouble() as upstream:
        listed = [case(upstream.url, "1-1")]
        upstream.routes.update(oyez_upstream(listed, {"/cases/1999/1-1": Route(body=drip, pause_s=0.2)}))
        report = refresh_against(db_path, upstream)
        sent = upstream.sent_bytes["/cases/1999/1-1"]
    assert sent < 20, sent
    reason = fetch_quarantine(db_path)["1999/1-1"]
    assert "no complete answer within 1 s" in reason and "CASEFORGE_FETCH_DEADLINE_S" in reason, reason
    assert report.status == "failed"


def test_a_url_on_a_host_the_settings_do_not_name_is_never_requested(db_path):
    requested = []
    transport = httpx.MockTransport(lambda request: requested.append(request.url) or httpx.Response(200, content=b"x"))
    fetcher = Fetcher(Settings(db_path=db_path, requests_per_second=0), RawArchive(connect(db_path)),
                      transport=transport)
    for url in ("http://169.254.169.254/latest/meta-data/", "https://api.oyez.org.evil.test/cases/1/2",
                "http://api.oyez.org/cases/1/2", "https://api.oyez.org:8443/cases/1/2",
                "https://user@evil.test/cases/1/2"):
        with pytest.raises(FetchError, match="not an allowed host for oyez"):
            fetcher.get("oyez", "k", url, kind="case")
    for url in ("file:///etc/passwd", "http://[::1/cases", "https://"):
        with pytest.raises(FetchError, match="refused: not an http"):
            fetcher.get("oyez", "k", url, kind="case")
    with pytest.raises(FetchError, match="no allowed host for source nowhere"):
        fetcher.get("nowhere", "k", "https://api.oyez.org/cases/1/2", kind="case")
    assert requested == []
    assert fetcher.get("oyez", "k", "https://api.oyez.org/cases/1/2", kind="case").payload.body == b"x"
