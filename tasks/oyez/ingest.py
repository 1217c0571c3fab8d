"""Oyez stages: plan from the case list, fetch details, parse, gate and load. No Prefect here."""
from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import duckdb
import httpx
import pandas as pd

from caseforge.archive import (ParsedPayloads, ParsePlan, Payload, RawArchive, payload_origin, sha256_hex,
                               size_problem)
from caseforge.fetch import Fetcher, FetchError
from caseforge.file_digests import DigestedFile, FileDigests
from caseforge.gate import ParseProblem, failure_reason, quarantine, quarantine_problem
from caseforge.load import CuratedTable, batch_frame, batches, gate_and_load, load_batch
from caseforge.progress import Progress
from caseforge.session import RunSession, run_session
from caseforge.settings import Settings, upstream
from caseforge.stage_report import StageReport
from caseforge.tasks.oyez.legacy import parse_legacy_table
from caseforge.tasks.oyez.parse import (
    COLUMNS, OyezParseError, detail_key, key_from_href, load_case_json, parse_case, read_case_list,
)
from caseforge.warehouse.statements import run_sql, run_sql_over_rows

log = logging.getLogger(__name__)

SOURCE = "oyez"
def api() -> str:
    """The Oyez API's base URL ([upstream] oyez)."""
    return upstream("oyez")

BATCH_SIZE = 200
# The case parser (parse.py) and its version: bump it when parse_case makes other rows from the same file, so
# the next run parses every case again (ops.loaded_payloads); the legacy table's likewise (legacy.py).
PARSER = "oyez-case/1"
LEGACY_PARSER = "oyez-legacy/1"
CASES = CuratedTable("scotus_cases", "oyez/curate_scotus_cases.sql", "case_id", content_column="raw_sha256",
                     unit=("case_id",))
LEGACY = CuratedTable("scotus_legacy", "oyez/curate_scotus_legacy.sql", "case_id")


@dataclass
class PlannedCase:
    key: str
    href: str
    summary_sha: str


def list_request(term: str | None) -> tuple[str, str, dict]:
    """(archive key, url, params) of the case list, all terms or one."""
    if term:
        return f"list/{term}", f"{api()}/cases", {"per_page": 0, "filter": f"term:{term}"}
    return "list/all", f"{api()}/cases", {"per_page": 0}


def summary_sha(item: dict) -> str:
    return hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def plan_from_list(con: duckdb.DuckDBPyConnection, summaries: list[dict], full: bool) -> tuple[list[PlannedCase], int]:
    """Cases whose summary is new or changed since the last refresh (all of them with full)."""
    known = dict(run_sql(con, "oyez/list_state.sql").fetchall())
    planned, unchanged = [], 0
    for item in summaries:
        key = key_from_href(item["href"])
        sha = summary_sha(item)
        if not full and known.get(key) == sha:
            unchanged += 1
            continue
        planned.append(PlannedCase(key, item["href"], sha))
    return planned, unchanged


def list_summaries(con: duckdb.DuckDBPyConnection, run_id: int, payload: Payload, report: StageReport) -> list[dict]:
    """The usable summaries of an archived case list; each entry that is not one is quarantined with its index.
    A list over the size limit or not a JSON array is quarantined whole: nothing is planned from it."""
    reason = size_problem(SOURCE, "list", len(payload.body))
    if reason is None:
        try:
            items, problems = read_case_list(payload.body)
        except Exception as exc:  # noqa: BLE001 - OyezParseError, or a parser bug on this list
            reason = failure_reason(exc)
    if reason is not None:
        quarantine_problem(con, run_id, "scotus_cases", ParseProblem(payload.key, reason, payload.sha256), report, "oyez")
        return []
    for problem in problems:
        quarantine_problem(con, run_id, "scotus_cases", ParseProblem(f"{payload.key} {problem.split(':', 1)[0]}",
                           problem.split(": ", 1)[-1], payload.sha256, key=payload.key), report, "oyez")
    return items


def fetch_list(fetcher: Fetcher, con: duckdb.DuckDBPyConnection, run_id: int, term: str | None,
               report: StageReport) -> list[dict] | None:
    """The case list, or None when the server says it has not changed since the last run."""
    key, url, params = list_request(term)
    result = fetcher.get(SOURCE, key, url, params=params, kind="list")
    report.add("list_requests")
    if result.not_modified:
        report.add("list_not_modified")
        return None
    return list_summaries(con, run_id, result.payload, report)


def fetch_details(fetcher: Fetcher, con: duckdb.DuckDBPyConnection, run_id: int, planned: list[PlannedCase],
                  report: StageReport) -> list[tuple[PlannedCase, Payload]]:
    fetched = []
    for case in planned:
        try:
            result = fetcher.get(SOURCE, case.key, case.href, kind="case")
        except FetchError as exc:
            report.add("fetch_failed")
            report.fail(f"oyez {case.key}: fetch failed: {exc.reason}")
            quarantine(con, run_id, "scotus_cases", "fetch", exc.reason, source_key=case.key)
            continue
        report.add("fetched")
        fetched.append((case, result.payload))
    return fetched


def parse_batch(payloads: list[Payload]) -> tuple[list[dict], list[ParseProblem]]:
    """Rows of the payloads that parse, and one problem (naming the key and file) for each that does not,
    whatever the failure: one bad case never loses the others. Pure."""
    rows, problems = [], []
    for payload in payloads:
        reason = size_problem(SOURCE, "case", len(payload.body))
        if reason is None:
            try:
                rows.append(parse_case(payload.body, raw_sha256=payload.sha256))
                continue
            except Exception as exc:  # noqa: BLE001 - any parser failure quarantines this case only
                reason = failure_reason(exc)
        problems.append(ParseProblem(payload_origin(payload), reason, payload.sha256, key=payload.key))
    return rows, problems


def parse_payloads(con: duckdb.DuckDBPyConnection, run_id: int, payloads: list[Payload],
                   report: StageReport) -> pd.DataFrame:
    """The rows of the payloads that parse; each one that does not is quarantined."""
    rows, found = parse_batch(payloads)
    for problem in found:
        quarantine_problem(con, run_id, "scotus_cases", problem, report, "oyez")
    report.add("parsed", len(rows))
    return batch_frame(rows, COLUMNS, "case_id", report)


def load_cases(con: duckdb.DuckDBPyConnection, run_id: int, frame: pd.DataFrame, report: StageReport,
               remake: bool = False):
    return load_batch(con, run_id, frame, CASES, report, remake, loaded="passed_gate")


def _ledger(con: duckdb.DuckDBPyConnection, reparse: bool = False) -> ParsedPayloads:
    return ParsedPayloads(con, SOURCE, PARSER, "scotus_cases", reparse)


def load_payloads(con: duckdb.DuckDBPyConnection, run_id: int, payloads: list[Payload], report: StageReport,
                  reparse: bool = False) -> None:
    """Parse, gate and load the case payloads this parser has not loaded before (all with `reparse`); the
    others are counted unchanged. A payload is recorded as loaded with what it quarantined (a parse problem, a
    quarantined row: a known problem is not parsed again); one of a rejected batch is tried again next run."""
    ledger = _ledger(con, reparse)
    plan = ledger.plan(payloads)
    plan.report_to(report)
    frame = parse_payloads(con, run_id, plan.parse, report)
    outcome = load_cases(con, run_id, frame, report, remake=bool(plan.remade))
    ledger.settle_batch(run_id, plan, frame, outcome, report)


def remember_listed(con: duckdb.DuckDBPyConnection, cases: list[PlannedCase]) -> None:
    if not cases:
        return
    now = datetime.now(timezone.utc)
    run_sql_over_rows(con, "oyez/remember_listed.sql",
                      [{"key": c.key, "href": c.href, "summary_sha": c.summary_sha, "seen_at": now} for c in cases])


def process_live_batch(fetcher: Fetcher, con: duckdb.DuckDBPyConnection, run_id: int,
                       batch: list[PlannedCase], report: StageReport, reparse: bool = False) -> None:
    """Fetch, parse, gate and load one batch; remember the list entries it settled."""
    fetched = fetch_details(fetcher, con, run_id, batch, report)
    load_payloads(con, run_id, [p for _, p in fetched], report, reparse)
    remember_listed(con, [case for case, _ in fetched])


def replay_files(directory: Path) -> tuple[list[Path], list[Path]]:
    """Case-detail files and case-list files under a replay folder (the samples' layout)."""
    if not directory.is_dir():
        raise FileNotFoundError(f"--from-dir {directory} is not a folder")
    details, lists = [], []
    for path in sorted(directory.rglob("*.json")):
        head = path.read_bytes()[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
        (lists if head.startswith(b"[") else details).append(path)
    return details, lists


def replay_key(body: bytes, path: Path) -> str:
    """The key a live fetch would archive a recorded detail file under; file/<name> when the file does not say."""
    try:
        data = load_case_json(body)
        if isinstance(data.get("href"), str) and data["href"].count("/") >= 2:
            return key_from_href(data["href"])
        docket = data.get("docket_number")
        if data.get("term") is not None and (docket is None or isinstance(docket, str)):
            return detail_key(str(data.get("term")), docket)
    except OyezParseError:
        pass
    return f"file/{path.name}"


def archive_replay_batch(archive: RawArchive, paths: list[Path],
                         too_big: list[ParseProblem] | None = None) -> list[Payload]:
    """Archive recorded detail files under the key a live fetch would use, in one lookup and one write. A file
    over the size limit is left unread (neither archived nor parsed) and its problem appended to `too_big`
    (OyezParseError without it). A content the archive already holds under a key of its own (term/docket) keeps
    that key without its JSON being read again: a night with nothing new reads and hashes the files only."""
    read = []
    for path in paths:
        over = size_problem(SOURCE, "case", path.stat().st_size)
        if over:
            if too_big is None:
                raise OyezParseError(f"file/{path.name}: {over}")
            too_big.append(ParseProblem(f"file/{path.name}", over))
            continue
        read.append((path, path.read_bytes()))
    known = archive.keys_of(SOURCE, sorted({sha256_hex(body) for _, body in read}))
    items = []
    for path, body in read:
        keys = [k for k in known.get(sha256_hex(body), ()) if not k.startswith("file/")]
        key = keys[0] if len(keys) == 1 else replay_key(body, path)
        items.append((key, body, path.resolve().as_uri(), "application/json"))
    return [payload for payload, _ in archive.store_many(SOURCE, items)]


def import_legacy(con: duckdb.DuckDBPyConnection, archive: RawArchive, run_id: int, path: Path,
                  report: StageReport, reparse: bool = False) -> None:
    """Bulk import of the Oyez-derived legacy table (it carries `disposition`); not parsed again when this
    parser loaded the same file before (all of it)."""
    too_big = size_problem(SOURCE, "legacy", path.stat().st_size)
    if too_big:
        quarantine_problem(con, run_id, "scotus_legacy", ParseProblem(path.name, too_big), report, "oyez legacy table")
        return
    payload, _ = archive.store_file(SOURCE, f"legacy/{path.name}", path, content_type="text/csv")
    ledger = ParsedPayloads(con, SOURCE, LEGACY_PARSER, "scotus_legacy", reparse)
    plan = ledger.plan([payload])
    plan.report_to(report, unchanged="legacy_unchanged")
    if not plan.parse:
        return
    try:
        frame, problems = parse_legacy_table(payload.body, payload.sha256)
    except Exception as exc:  # noqa: BLE001 - a table without its header or columns: the file is quarantined
        quarantine_problem(con, run_id, "scotus_legacy", ParseProblem(path.name, failure_reason(exc), payload.sha256),
                           report, "oyez legacy table")
        ledger.settle(run_id, {payload: 0}, [], report)       # a known problem until the file changes
        return
    for problem in problems:
        where, _, reason = problem.partition(": ")
        quarantine_problem(con, run_id, "scotus_legacy", ParseProblem(f"{path.name} {where}", reason, payload.sha256,
                                                                      key=path.name), report, "oyez legacy table")
    outcome = gate_and_load(con, run_id, frame, LEGACY)
    outcome.report_to(report, "legacy_loaded", records=False)
    ledger.settle_batch(run_id, plan, frame, outcome, report)


# --- the refresh as a whole; the Prefect flow passes task-wrapped versions of these steps ---

def legacy_step(session: RunSession, path: str, reparse: bool = False) -> None:
    import_legacy(session.con, session.archive, session.run_id, Path(path), session.report, reparse)


def plan_step(session: RunSession, fetcher: Fetcher, term: str | None, full: bool) -> list[PlannedCase]:
    summaries = fetch_list(fetcher, session.con, session.run_id, term, session.report)
    if summaries is None:
        # Unchanged upstream list: plan from the archived copy, which still finds the cases an
        # interrupted run fetched the list for but never settled.
        key, _, _ = list_request(term)
        summaries = list_summaries(session.con, session.run_id, session.archive.latest(SOURCE, key), session.report)
    session.report.add("listed", len(summaries))
    planned, unchanged = plan_from_list(session.con, summaries, full)
    session.report.add("unchanged_in_list", unchanged)
    return planned


def live_batch_step(session: RunSession, fetcher: Fetcher, batch: list[PlannedCase], reparse: bool = False) -> None:
    process_live_batch(fetcher, session.con, session.run_id, batch, session.report, reparse)


def replay_files_to_read(session: RunSession, paths: list[Path], reparse: bool = False) -> list[Path]:
    """The case files of `paths` to read, in order. The others are counted unchanged without being read: a file
    unchanged since it was hashed (caseforge.file_digests) whose content the archive holds under one case key,
    which this parser loaded whole before (the ledger, one query for all)."""
    if reparse:
        return paths
    report = session.report
    digests = FileDigests(session.con, SOURCE)
    try:
        hashed = {path: digests.sha256(path) for path in paths
                  if size_problem(SOURCE, "case", path.stat().st_size) is None}
    finally:
        digests.save(report)
    known = session.archive.keys_of(SOURCE, sorted(set(hashed.values())))
    keyed = {}
    for path, sha in hashed.items():
        keys = [k for k in known.get(sha, ()) if not k.startswith("file/")]
        if len(keys) == 1:
            keyed[path] = DigestedFile(keys[0], sha)
    plan = _ledger(session.con).plan(list(keyed.values()))
    ParsePlan([], plan.skipped, set(), plan.known).report_to(report)
    to_parse = set(plan.parse)
    return [path for path in paths if path not in keyed or keyed[path] in to_parse]


def replay_batch_step(session: RunSession, paths: list[Path], reparse: bool = False) -> None:
    too_big: list[ParseProblem] = []
    payloads = archive_replay_batch(session.archive, paths, too_big)
    for problem in too_big:
        quarantine_problem(session.con, session.run_id, "scotus_cases", problem, session.report, "oyez")
    load_payloads(session.con, session.run_id, payloads, session.report, reparse)


@dataclass
class Steps:
    legacy: Callable = legacy_step
    plan: Callable = plan_step
    live_batch: Callable = live_batch_step
    replay_files: Callable = replay_files_to_read
    replay_batch: Callable = replay_batch_step


def refresh(settings: Settings, from_dir: str | None = None, term: str | None = None, full: bool = False,
            legacy_table: str | None = None, transport: httpx.BaseTransport | None = None,
            steps: Steps | None = None, sleep=time.sleep, reparse: bool = False) -> StageReport:
    """The Oyez refresh: legacy table (optional), then replayed files or the live API. A file or case this
    parser version loaded before is not parsed again (counted unchanged) unless `reparse`."""
    steps = steps or Steps()
    with run_session(settings, "ingest", "oyez") as session:
        report = session.report
        if legacy_table:
            steps.legacy(session, legacy_table, reparse)
        if from_dir:
            details, lists = replay_files(Path(from_dir))
            report.add("list_files_seen", len(lists))
            report.add("listed", len(details))          # the folder's case files (source health)
            to_read = steps.replay_files(session, details, reparse)
            progress = Progress("oyez replay", total=len(to_read))
            for batch in batches(to_read, BATCH_SIZE):
                steps.replay_batch(session, batch, reparse)
                progress.step(len(batch))
            progress.close()
        else:
            with Fetcher(settings, session.archive, transport=transport, sleep=sleep) as fetcher:
                planned = steps.plan(session, fetcher, term, full)
                log.info("oyez: %d case details to fetch", len(planned))
                progress = Progress("oyez details", total=len(planned))
                for batch in batches(planned, BATCH_SIZE):
                    steps.live_batch(session, fetcher, batch, reparse)
                    progress.step(len(batch))
                progress.close()
                report.add("http_requests", fetcher.stats.requests)
                report.add("http_retries", fetcher.stats.retries)
                report.add("http_not_modified", fetcher.stats.not_modified)
        report.counts.setdefault("new", 0)
        report.counts.setdefault("changed", 0)
    log.info("oyez: %s", ", ".join(f"{k}={v}" for k, v in sorted(report.counts.items())))
    return report
