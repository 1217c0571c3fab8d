"""A host that refuses connections is given up after a bounded number of attempts (or seconds): the rest of
the run's requests to it fail at once, naming the host, instead of each retrying with backoff. Real sockets
on loopback (a closed port refuses), no network."""
import socket
import time

import httpx
import pytest

from caseforge.archive import RawArchive
from caseforge.fetch import Fetcher, FetchError, HostUnreachable, install_host_slots
from caseforge.settings import Settings
from caseforge.warehouse.connection import connect


def refusing_url() -> str:
    """A loopback port nothing listens on: connecting to it is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def fetcher_for(db_path, base, sleeps=None, clock=time.monotonic, **overrides):
    settings = Settings(db_path=db_path, requests_per_second=0, max_retries=5, backoff_base_s=1.0,
                        **overrides)
    sleep = sleeps.append if sleeps is not None else time.sleep
    fetcher = Fetcher(settings, RawArchive(connect(db_path)), sleep=sleep, clock=clock)
    fetcher.allow("oyez", base)
    return fetcher


def test_a_refusing_host_is_given_up_after_the_bound_and_later_requests_fail_at_once(db_path):
    base = refusing_url()
    sleeps: list[float] = []
    fetcher = fetcher_for(db_path, base, sleeps, host_max_failures=8, host_failure_budget_s=0)
    errors = []
    for window in range(68):                    # HUDOC's yearly windows since 1959
        with pytest.raises(FetchError) as caught:
            fetcher.get("oyez", f"query/{window}", f"{base}/app/query/results", params={"w": window}, kind="case")
        errors.append(caught.value)
    # 8 connection attempts in all (6 for the first request, 2 for the second), not 68 × 6
    assert fetcher.stats.requests == 8
    assert len(sleeps) == 6                     # 5 backoffs in the first request, 1 in the second
    assert not isinstance(errors[0], HostUnreachable)
    assert all(isinstance(e, HostUnreachable) for e in errors[1:])
    host = base.removeprefix("http://")
    assert errors[-1].host == host
    assert f"host {host} unreachable: 8 connection attempt(s) in a row failed" in errors[-1].reason
    assert "CASEFORGE_HOST_MAX_FAILURES" in errors[-1].reason


def test_the_time_budget_gives_a_host_up_too(db_path):
    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds):
        sleeps.append(seconds)
        now[0] += seconds

    settings = Settings(db_path=db_path, requests_per_second=0, max_retries=5, backoff_base_s=1.0,
                        host_max_failures=0, host_failure_budget_s=20)
    fetcher = Fetcher(settings, RawArchive(connect(db_path)), sleep=sleep, clock=lambda: now[0])
    base = refusing_url()
    fetcher.allow("oyez", base)
    with pytest.raises(HostUnreachable, match=r"over \d+ s"):
        fetcher.get("oyez", "k", f"{base}/a", kind="case")
    assert now[0] <= 20                         # no backoff is slept past the budget
    assert 4 <= fetcher.stats.requests <= 5     # 1 + 2 + 4 (+ jitter) slept, the next 8 s would pass 20 s


def test_an_answer_resets_the_streak_and_other_hosts_are_not_affected(db_path):
    answers = {"up.test": 0}

    def server(request: httpx.Request) -> httpx.Response:
        if request.url.host == "down.test":
            raise httpx.ConnectError("refused")
        answers["up.test"] += 1
        return httpx.Response(200, content=b"ok")

    settings = Settings(db_path=db_path, requests_per_second=0, max_retries=1, backoff_base_s=0,
                        host_max_failures=3, host_failure_budget_s=0)
    fetcher = Fetcher(settings, RawArchive(connect(db_path)), transport=httpx.MockTransport(server),
                      sleep=lambda s: None)
    fetcher.allow("oyez", "https://down.test")
    fetcher.allow("oyez", "https://up.test")
    with pytest.raises(FetchError, match="gave up after 2 attempts"):
        fetcher.get("oyez", "a", "https://down.test/a", kind="case")          # 2 failures: under the bound
    with pytest.raises(HostUnreachable, match="host down.test unreachable"):
        fetcher.get("oyez", "b", "https://down.test/b", kind="case")          # the third gives it up
    assert fetcher.get("oyez", "c", "https://up.test/c", kind="case").payload.body == b"ok"
    assert answers["up.test"] == 1


def test_a_live_refresh_against_a_refusing_host_fails_within_seconds(db_path):
    """The guides refresh (eight guides, one host) with the default bound and a 0.05 s backoff base."""
    from caseforge.settings import overriding
    from caseforge.tasks.guides import ingest as guides

    settings = Settings(db_path=db_path, requests_per_second=0, backoff_base_s=0.05)
    started = time.monotonic()
    with overriding({"upstream": {"guides": refusing_url()}}):
        report = guides.refresh(settings)
    elapsed = time.monotonic() - started
    assert elapsed < 30, elapsed
    assert report.status == "failed"
    assert any("unreachable" in f for f in report.failures), report.failures


def test_the_host_slot_is_held_from_the_first_request_until_close(db_path):
    held = []

    class Slot:
        def __init__(self, host):
            self.host = host

        def __enter__(self):
            held.append(("take", self.host))

        def __exit__(self, *exc):
            held.append(("give", self.host))

    install_host_slots(Slot)
    try:
        settings = Settings(db_path=db_path, requests_per_second=0)
        transport = httpx.MockTransport(lambda request: httpx.Response(200, content=b"x"))
        with Fetcher(settings, RawArchive(connect(db_path)), transport=transport) as fetcher:
            fetcher.allow("oyez", "https://one.test")
            fetcher.allow("oyez", "https://two.test")
            fetcher.get("oyez", "a", "https://one.test/a", kind="case")
            fetcher.get("oyez", "b", "https://one.test/b", kind="case")
            fetcher.get("oyez", "c", "https://two.test/c", kind="case")
            assert held == [("take", "one.test"), ("take", "two.test")]
        assert held[2:] == [("give", "two.test"), ("give", "one.test")]
    finally:
        install_host_slots(None)


def test_a_live_hudoc_refresh_against_a_refusing_host_is_a_failed_fetch_not_quarantined_data(db_path):
    """Query pages that could not be fetched fail the stage and count as fetch_failed (as for every source);
    they are not bad data, so nothing counts as quarantined. Each is still recorded, key and reason, in
    ops.quarantine (stage "fetch")."""
    from caseforge.settings import overriding
    from caseforge.tasks.hudoc import ingest as hudoc

    settings = Settings(db_path=db_path, requests_per_second=0, backoff_base_s=0.05)
    with overriding({"upstream": {"hudoc": refusing_url()}}):
        report = hudoc.refresh(settings, since="2020-01-01")
    assert report.status == "failed", (report.status, report.counts)
    assert report.counts.get("quarantined", 0) == 0, report.counts
    windows = report.counts["fetch_failed"]
    assert windows == report.counts["query_pages_failed"] and windows >= 6      # a window a year since 2020
    assert len(report.failures) == windows and any("unreachable" in f for f in report.failures)
    con = connect(db_path)
    recorded = con.execute("SELECT stage, source_key FROM ops.quarantine WHERE table_name = 'echr_judgments'").fetchall()
    assert len(recorded) == windows and {stage for stage, _ in recorded} == {"fetch"}
