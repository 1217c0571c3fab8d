"""HUDOC query API pager: date windows under the 10,000-row cap, pages of at most 500 rows."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Callable, Iterator

from caseforge.archive import Payload
from caseforge.fetch import Fetcher, FetchError
from caseforge.settings import upstream
from caseforge.stage_report import StageReport
from caseforge.tasks.hudoc.metadata import RecordFilter, TruncatedPage, records_from_payload

SOURCE = "hudoc"
def api() -> str:
    """HUDOC's base URL ([upstream] hudoc)."""
    return upstream("hudoc")


def query_url() -> str:
    return f"{api()}/app/query/results"
RANKING_MODEL = "11111111-0000-0000-0000-000000000000"
RESULT_CAP = 10_000
MAX_PAGE = 500
SELECT_FIELDS = (
    "itemid,docname,doctype,languageisocode,kpdate,judgementdate,appno,article,conclusion,importance,"
    "ecli,respondent,originatingbody,doctypebranch,separateopinion,isplaceholder,application,scl"
)


@dataclass(frozen=True)
class Window:
    """Judgments with start <= kpdate < end."""
    start: date
    end: date

    def halves(self) -> tuple["Window", "Window"]:
        middle = self.start + (self.end - self.start) / 2
        return Window(self.start, middle), Window(middle, self.end)

    @property
    def days(self) -> int:
        return (self.end - self.start).days

    def label(self) -> str:
        return f"{self.start.isoformat()}_{self.end.isoformat()}"


def query_expression(window: Window, record_filter: RecordFilter) -> str:
    parts = ["contentsitename:ECHR"]
    if record_filter.languages:
        parts.append("(" + " OR ".join(f'languageisocode="{lang}"' for lang in record_filter.languages) + ")")
    if record_filter.doctypes:
        parts.append("(" + " OR ".join(f"doctype={kind}" for kind in record_filter.doctypes) + ")")
    parts.append(f'(kpdate>="{window.start.isoformat()}T00:00:00.0Z" AND kpdate<"{window.end.isoformat()}T00:00:00.0Z")')
    return " AND ".join(parts)


def query_params(window: Window, record_filter: RecordFilter, start: int, length: int) -> dict:
    return {
        "query": query_expression(window, record_filter),
        "select": SELECT_FIELDS,
        "sort": "kpdate Ascending",
        "start": start,
        "length": min(length, MAX_PAGE),
        "rankingModelId": RANKING_MODEL,
    }


def yearly_windows(since: date, until: date) -> list[Window]:
    """Calendar-year windows covering [since, until); split further only when a year is over the cap."""
    windows, start = [], since
    while start < until:
        end = min(date(start.year + 1, 1, 1), until)
        windows.append(Window(start, end))
        start = end
    return windows


@dataclass
class Page:
    window: Window
    start: int
    payload: Payload
    records: list[dict]


@dataclass
class PagerProblem:
    key: str
    reason: str
    raw_sha256: str | None = None
    fetch_failed: bool = False          # the page could not be fetched (not bad data)


@dataclass
class QueryPager:
    """Walks date windows page by page; problems are collected (the caller quarantines them), never raised."""
    fetcher: Fetcher
    record_filter: RecordFilter = field(default_factory=RecordFilter)
    page_size: int = MAX_PAGE
    cap: int = RESULT_CAP
    report: StageReport | None = None
    problems: list[PagerProblem] = field(default_factory=list)
    on_problem: Callable[[PagerProblem], None] | None = None

    def _count(self, name: str, n: int = 1) -> None:
        if self.report is not None:
            self.report.add(name, n)

    def _problem(self, key: str, reason: str, sha: str | None = None, fetch_failed: bool = False) -> None:
        problem = PagerProblem(key, reason, sha, fetch_failed)
        self.problems.append(problem)
        if self.on_problem:
            self.on_problem(problem)
        if self.report is not None:
            self.report.fail(f"hudoc {key}: {reason}")

    def _fetch(self, window: Window, start: int) -> tuple[Page | None, int | None]:
        key = f"query/{window.label()}/{start}"
        params = query_params(window, self.record_filter, start, self.page_size)
        try:
            result = self.fetcher.get(SOURCE, key, query_url(), params=params, conditional=False,
                                        kind="metadata")
        except FetchError as exc:
            self._count("query_pages_failed")
            self._problem(key, f"query page fetch failed: {exc.reason}", fetch_failed=True)
            return None, None
        self._count("query_pages")
        try:
            count, records = records_from_payload(result.payload.body)
        except TruncatedPage as exc:
            self._count("query_pages_truncated")
            self._problem(key, str(exc), result.payload.sha256)
            return None, None
        return Page(window, start, result.payload, records), count

    def pages(self, windows: list[Window]) -> Iterator[Page]:
        pending = list(windows)
        while pending:
            window = pending.pop(0)
            first, count = self._fetch(window, 0)
            if first is None:
                continue
            if count is not None and count > self.cap:
                if window.days <= 1:
                    self._problem(f"query/{window.label()}",
                                  f"{count} results in a single day exceed the {self.cap}-row cap; window skipped")
                    continue
                self._count("windows_split")
                pending[:0] = list(window.halves())
                continue
            self._count("windows")
            yield first
            total = count if count is not None else len(first.records)
            start = len(first.records)
            if not first.records:
                if total:
                    self._count("empty_pages")
                continue
            while start < total:
                page, _ = self._fetch(window, start)
                if page is None:
                    start += self.page_size
                    continue
                if not page.records:
                    self._count("empty_pages")
                    break
                yield page
                start += len(page.records)


def since_with_overlap(latest: date | None, overlap_days: int, floor: date = date(1959, 1, 1)) -> date:
    if latest is None:
        return floor
    return max(floor, latest - timedelta(days=overlap_days))
