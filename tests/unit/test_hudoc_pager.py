"""The HUDOC query pager against a scripted HUDOC server (httpx.MockTransport): no network."""
from __future__ import annotations

import re
from datetime import date

import httpx
import pytest

from caseforge.archive import RawArchive
from caseforge.fetch import Fetcher
from caseforge.settings import load_settings
from caseforge.stage_report import StageReport
from caseforge.tasks.hudoc import ingest
from caseforge.tasks.hudoc.metadata import RecordFilter
from caseforge.tasks.hudoc.query import QueryPager, Window
from caseforge.warehouse.connection import connect

WINDOW_RE = re.compile(r'kpdate>="(\d{4}-\d{2}-\d{2})T.*kpdate<"(\d{4}-\d{2}-\d{2})T')


def record(itemid: str, day: date) -> dict:
    return {"itemid": itemid, "docname": f"CASE OF X{itemid} v. TURKEY", "doctype": "HEJUD",
            "languageisocode": "ENG", "kpdate": f"{day.isoformat()}T00:00:00", "appno": "1/20;2/20",
            "article": "6;6-1", "importance": "4", "respondent": "TUR", "originatingbody": "26",
            "doctypebranch": "COMMITTEE", "ecli": "ECLI:CE:ECHR:2020:0101JUD000000120", "separateopinion": "FALSE",
            "isplaceholder": "False"}


class ScriptedHudoc:
    """A stand-in HUDOC query endpoint: `per_day` results per day of the window, with optional faults."""

    def __init__(self, per_day: int, faults: dict | None = None):
        self.per_day = per_day
        self.faults = faults or {}     # (window_start, start) -> list of responses to give first
        self.requests: list[tuple[str, str, int, int]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        params = request.url.params
        first, end = WINDOW_RE.search(params["query"]).groups()
        start, length = int(params["start"]), int(params["length"])
        assert length <= 500
        self.requests.append((first, end, start, length))
        queued = self.faults.get((first, start))
        if queued:
            return queued.pop(0)
        count = (date.fromisoformat(end) - date.fromisoformat(first)).days * self.per_day
        rows = [{"columns": record(f"001-{first.replace('-', '')}{i:05d}", date.fromisoformat(first))}
                for i in range(start, min(start + length, count))]
        return httpx.Response(200, json={"resultcount": count, "results": rows})


@pytest.fixture
def warehouse(tmp_path):
    con = connect(tmp_path / "w.duckdb")
    yield con
    con.close()


def make_fetcher(con, server) -> Fetcher:
    return Fetcher(load_settings(), RawArchive(con), transport=httpx.MockTransport(server), sleep=lambda s: None)


def test_windows_over_the_cap_are_split_in_halves_until_every_query_fits(warehouse):
    server = ScriptedHudoc(per_day=30)           # 2020: 366 days x 30 = 10,980 rows > 10,000
    report = StageReport("t")
    with make_fetcher(warehouse, server) as fetcher:
        pages = list(QueryPager(fetcher, report=report).pages([Window(date(2020, 1, 1), date(2021, 1, 1))]))
    itemids = [r["itemid"] for p in pages for r in p.records]
    assert len(itemids) == len(set(itemids)) == 10_980
    assert report.counts["windows_split"] == 1 and report.counts["windows"] == 2
    paged = {(first, end) for first, end, start, _ in server.requests if start > 0}
    assert paged == {("2020-01-01", "2020-07-02"), ("2020-07-02", "2021-01-01")}
    assert all(length == 500 for *_, length in server.requests)


def test_a_single_day_over_the_cap_is_reported_not_looped(warehouse):
    server = ScriptedHudoc(per_day=20_000)
    pager_report = StageReport("t")
    with make_fetcher(warehouse, server) as fetcher:
        pager = QueryPager(fetcher, report=pager_report)
        assert list(pager.pages([Window(date(2020, 1, 1), date(2020, 1, 2))])) == []
    assert "exceed the 10000-row cap" in pager.problems[0].reason
    assert not pager_report.ok


def test_an_empty_page_before_the_announced_count_ends_the_window(warehouse):
    server = ScriptedHudoc(per_day=40, faults={
        ("2020-01-01", 500): [httpx.Response(200, json={"resultcount": 1240, "results": []})]})
    report = StageReport("t")
    with make_fetcher(warehouse, server) as fetcher:
        pages = list(QueryPager(fetcher, report=report).pages([Window(date(2020, 1, 1), date(2020, 2, 1))]))
    assert [len(p.records) for p in pages] == [500]
    assert report.counts["empty_pages"] == 1


def test_transient_errors_are_retried_and_the_page_delivered(warehouse):
    server = ScriptedHudoc(per_day=10, faults={
        ("2020-01-01", 0): [httpx.Response(503), httpx.Response(429, headers={"Retry-After": "0"})]})
    with make_fetcher(warehouse, server) as fetcher:
        pages = list(QueryPager(fetcher).pages([Window(date(2020, 1, 1), date(2020, 2, 1))]))
        assert fetcher.stats.retries == 2
    assert sum(len(p.records) for p in pages) == 310


def test_a_truncated_page_is_quarantined_and_the_run_goes_on(warehouse):
    truncated = httpx.Response(200, content=b'{"resultcount": 1240, "results": [{"columns": {"itemid": "001-1')
    server = ScriptedHudoc(per_day=40, faults={("2020-01-01", 500): [truncated]})
    report = StageReport("t")
    with make_fetcher(warehouse, server) as fetcher:
        ingest.live_metadata(fetcher, warehouse, 1, date(2020, 1, 1), date(2020, 2, 1), RecordFilter(), report)
    assert warehouse.execute("SELECT count(*) FROM curated.echr_judgments").fetchone()[0] == 1240 - 500
    stage, reason, key = warehouse.execute(
        "SELECT stage, reason, source_key FROM ops.quarantine WHERE table_name = 'echr_judgments'").fetchone()
    assert stage == "fetch" and "not valid JSON" in reason and key == "query/2020-01-01_2020-02-01/500"
    assert report.counts["query_pages_truncated"] == 1 and not report.ok
    lists = warehouse.execute("SELECT appnos, articles FROM curated.echr_judgments LIMIT 1").fetchone()
    assert lists == (["1/20", "2/20"], ["6", "6-1"])


def test_query_expression_filters_language_doctype_and_window():
    from caseforge.tasks.hudoc.query import query_params

    params = query_params(Window(date(2024, 1, 1), date(2024, 2, 1)), RecordFilter(), 0, 900)
    assert params["length"] == 500
    assert params["query"] == ('contentsitename:ECHR AND (languageisocode="ENG") AND (doctype=HEJUD) AND '
                               '(kpdate>="2024-01-01T00:00:00.0Z" AND kpdate<"2024-02-01T00:00:00.0Z")')
    assert params["rankingModelId"] == "11111111-0000-0000-0000-000000000000"


def test_incremental_start_is_the_latest_judgment_less_an_overlap(warehouse):
    assert ingest.incremental_since(warehouse, None) == date(1959, 1, 1)
    assert ingest.incremental_since(warehouse, "2024-03-01") == date(2024, 3, 1)
    rows = [dict(ingest.meta.parse_record(record("001-5", date(2024, 5, 20)), "a" * 64))]
    ingest.load_judgments(warehouse, 1, rows, StageReport("t"))
    assert ingest.incremental_since(warehouse, None) == date(2024, 5, 6)
