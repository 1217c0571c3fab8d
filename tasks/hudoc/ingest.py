"""HUDOC stages: metadata pages → curated.echr_judgments; bodies → curated.echr_paragraphs. No Prefect here."""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Callable

import duckdb

from caseforge.archive import ParsedPayloads, ParsePlan, Payload, RawArchive, size_problem
from caseforge.artifacts import publish_counters
from caseforge.fetch import Fetcher, FetchError
from caseforge.file_digests import DigestedFile, FileDigests
from caseforge.gate import ParseProblem, failure_reason, quarantine, quarantine_problem
from caseforge.load import CuratedTable, batch_frame, batches, gate_and_load, load_batch
from caseforge.progress import Progress
from caseforge.session import RunSession, run_session
from caseforge.settings import Settings
from caseforge.stage_report import StageReport
from caseforge.tasks.hudoc import metadata as meta
from caseforge.tasks.hudoc.paragraphs import COLUMNS as PARAGRAPH_COLUMNS
from caseforge.tasks.hudoc.query import SOURCE, api, QueryPager, since_with_overlap, yearly_windows
from caseforge.tasks.hudoc.readers import parse_document
from caseforge.warehouse.statements import run_sql

log = logging.getLogger(__name__)

BATCH_SIZE = 200
DOCUMENT_COUNTERS = ("html_fetched", "docx_fetched", "documents_parsed", "documents_quarantined",
                     "extra_bodies_ignored")
PARAGRAPH_COUNTERS = ("paragraphs_parsed", "paragraphs_loaded", "paragraphs_quarantined")
OVERLAP_DAYS = 14
HTML_PATH = "/app/conversion/docx/html/body"
DOCX_PATH = "/app/conversion/docx/"
ITEMID_IN_NAME = re.compile(r"^(\d{3}-\d+)")
# doctypes whose body ends with an operative part ('FOR THESE REASONS, THE COURT ...'): judgments and decisions
OPERATIVE_DOCTYPES = re.compile(r"^[A-Z]{2}(?:JUD|DEC)$")
# The parsers and their versions: bump one when it makes other rows from the same payload, so the next run
# parses every such payload again (ops.loaded_payloads). The body parser is readers.parse_document (with
# paragraphs.py), the metadata parser metadata.parse_record; the record filter is part of the latter's name.
BODY_PARSER = "hudoc-body/1"
METADATA_PARSER = "hudoc-metadata/1"
JUDGMENTS = CuratedTable("echr_judgments", "hudoc/curate_echr_judgments.sql", "itemid",
                         change_counts_sql="hudoc/judgment_change_counts.sql", unit=("itemid",))
PARAGRAPHS = CuratedTable("echr_paragraphs", "hudoc/curate_echr_paragraphs.sql", "itemid", content_column="raw_sha256",
                          change_key=("itemid", "ordinal"), unit=("itemid",))


def metadata_parser(record_filter: meta.RecordFilter) -> str:
    return (f"{METADATA_PARSER} doctypes={','.join(record_filter.doctypes)} "
            f"languages={','.join(record_filter.languages)}")


@dataclass
class ReplayFiles:
    metadata: list[Path]
    documents: dict[str, list[Path]]      # itemid -> bodies (html first)


def replay_files(directory: Path) -> ReplayFiles:
    """Metadata JSON and ITEMID.html / ITEMID.docx bodies anywhere under a replay folder."""
    if not directory.is_dir():
        raise FileNotFoundError(f"--from-dir {directory} is not a folder")
    metadata = sorted(directory.rglob("*.json"))
    documents: dict[str, list[Path]] = {}
    bodies = sorted(directory.rglob("*.html")) + sorted(directory.rglob("*.htm")) + sorted(directory.rglob("*.docx"))
    for path in bodies:
        match = ITEMID_IN_NAME.match(path.name)
        if match:
            documents.setdefault(match[1], []).append(path)
    return ReplayFiles(metadata, documents)


def read_metadata(body: bytes, record_filter: meta.RecordFilter,
                  raw_sha256: str = "") -> tuple[list[dict], list[ParseProblem], int]:
    """(judgment rows, one problem per record that cannot be one, records left out by the filter) of one
    metadata payload. Pure. A payload that is not JSON raises meta.TruncatedPage: no record in it can be
    trusted; a malformed record (an impossible date, an object for a text) loses only itself."""
    _, records = meta.records_from_payload(body)
    rows, problems, filtered = [], [], 0
    for index, record in enumerate(records):
        if not record_filter.keeps(record):
            filtered += 1
            continue
        try:
            rows.append(meta.parse_record(record, raw_sha256))
        except Exception as exc:  # noqa: BLE001 - whatever a record does wrong, the others load
            itemid = record.get("itemid") if isinstance(record, dict) else None
            label = f"record {index}" + (f" ({itemid})" if isinstance(itemid, str) and itemid else "")
            problems.append(ParseProblem(label, failure_reason(exc), raw_sha256,
                                         row_data=record if isinstance(record, dict) else {"record": record}))
    return rows, problems, filtered


def parse_metadata_payload(con: duckdb.DuckDBPyConnection, run_id: int, payload: Payload,
                           record_filter: meta.RecordFilter, report: StageReport) -> list[dict]:
    """Judgment rows of one metadata payload; what cannot be one is quarantined."""
    reason = size_problem(SOURCE, "metadata", len(payload.body))
    if reason is None:
        try:
            rows, found, filtered = read_metadata(payload.body, record_filter, payload.sha256)
        except Exception as exc:  # noqa: BLE001 - TruncatedPage, or a parser bug on this payload
            reason = failure_reason(exc)
    if reason is not None:
        quarantine_problem(con, run_id, "echr_judgments", ParseProblem(payload.key, reason, payload.sha256), report,
                           "hudoc", counter="metadata_quarantined")
        return []
    if not rows and not found and not filtered:
        report.add("metadata_files_without_records")
    if filtered:
        report.add("filtered_out", filtered)
    for problem in found:
        quarantine_problem(con, run_id, "echr_judgments",
                           ParseProblem(f"{payload.key} {problem.where}", problem.reason, payload.sha256,
                                        problem.row_data, key=payload.key),
                           report, "hudoc", counter="metadata_quarantined")
    return rows


def load_judgments(con: duckdb.DuckDBPyConnection, run_id: int, rows: list[dict], report: StageReport,
                   remake: bool = False):
    if not rows:
        return None
    frame = batch_frame(rows, meta.COLUMNS, "itemid", report, duplicates_counter="duplicate_records_in_batch")
    return load_batch(con, run_id, frame, JUDGMENTS, report, remake, loaded="judgments_loaded",
                      quarantined="judgments_quarantined", changes_prefix="judgments_")


def replay_metadata(con, archive: RawArchive, run_id: int, paths: list[Path], record_filter: meta.RecordFilter,
                    report: StageReport, reparse: bool = False) -> None:
    """Metadata files → curated.echr_judgments; a file this parser (and record filter) loaded whole before is
    not parsed again."""
    items = []
    progress = Progress("hudoc metadata files", total=len(paths), unit="files")
    for path in paths:
        too_big = size_problem(SOURCE, "metadata", path.stat().st_size)
        if too_big:
            quarantine_problem(con, run_id, "echr_judgments", ParseProblem(f"file/metadata/{path.name}", too_big),
                               report, "hudoc", counter="metadata_quarantined")
        else:
            items.append((f"file/metadata/{path.name}", path.read_bytes(), path.resolve().as_uri(),
                          "application/json"))
            report.add("metadata_files")
        progress.step(1)           # after the read: a stop that came while it blocked ends the run here
    progress.close()
    payloads = [payload for payload, _ in archive.store_many(SOURCE, items)]
    ledger = ParsedPayloads(con, SOURCE, metadata_parser(record_filter), "echr_judgments", reparse)
    plan = ledger.plan(payloads)
    plan.report_to(report, unchanged="judgments_unchanged")
    rows = []
    with Progress("hudoc metadata (parse)", total=len(plan.parse), unit="files") as progress:
        for payload in plan.parse:
            rows += parse_metadata_payload(con, run_id, payload, record_filter, report)
            progress.step(1)
    outcomes = [load_judgments(con, run_id, rows[start:start + BATCH_SIZE * 5], report, remake=bool(plan.remade))
                for start in range(0, len(rows), BATCH_SIZE * 5)]
    ledger.settle_batch(run_id, plan, rows, outcomes, report)


def incremental_since(con: duckdb.DuckDBPyConnection, since: str | None) -> date:
    if since:
        return date.fromisoformat(since)
    latest = run_sql(con, "hudoc/latest_judgment_date.sql").fetchone()[0]
    return since_with_overlap(latest, OVERLAP_DAYS)


def live_metadata(fetcher: Fetcher, con: duckdb.DuckDBPyConnection, run_id: int, since: date, until: date,
                  record_filter: meta.RecordFilter, report: StageReport) -> None:
    def on_problem(problem) -> None:
        report.add("fetch_failed" if problem.fetch_failed else "quarantined")
        quarantine(con, run_id, "echr_judgments", "fetch", problem.reason, source_key=problem.key,
                   raw_sha256=problem.raw_sha256)

    pager = QueryPager(fetcher, record_filter, report=report, on_problem=on_problem)
    report.counts.setdefault("listed", 0)           # the records the query's pages listed (source health)
    rows: list[dict] = []
    windows = yearly_windows(since, until)
    progress = Progress("hudoc metadata pages", unit="pages", counters={"windows": 0})
    seen_windows = set()
    for page in pager.pages(windows):
        if page.window not in seen_windows:
            seen_windows.add(page.window)
            progress.count("windows")
        progress.step(1)
        report.add("fetched")
        report.add("listed", len(page.records))
        rows += parse_metadata_payload(con, run_id, page.payload, record_filter, report)
        if len(rows) >= BATCH_SIZE * 5:
            load_judgments(con, run_id, rows, report)
            rows = []
    progress.close()
    load_judgments(con, run_id, rows, report)


# ---- documents -------------------------------------------------------------------------------

def metadata_doctype(con, itemid: str) -> str | None:
    """The body's doctype from its metadata row; None when the warehouse has no row for it (a replayed folder
    may hold bodies only)."""
    known = run_sql(con, "hudoc/judgment_of_body.sql", [itemid]).fetchone()
    return None if known is None else (known[1] or "").upper()


def body_problems(doctype: str | None, parsed, numbering_ok: bool = True) -> list[str]:
    """Why a parsed body must not land although it parsed: a judgment or decision without its operative part
    (a body cut short; not asked when its numbering already failed). A body of unknown doctype is checked as
    a judgment."""
    if numbering_ok and (not doctype or OPERATIVE_DOCTYPES.match(doctype)) and not parsed.has_operative_part:
        return [f"no operative part ('FOR THESE REASONS'): the {doctype or 'judgment'} body looks truncated"]
    return []


def judgment_doctypes(con, itemids: list[str]) -> dict[str, str]:
    """The doctype of each of these bodies' metadata rows, in one query; a body without one is absent."""
    return {itemid: (doctype or "").upper()
            for itemid, doctype in run_sql(con, "hudoc/judgment_doctypes.sql", {"itemids": itemids}).fetchall()}


def parse_body(con, run_id: int, itemid: str, payload: Payload, report: StageReport,
               doctypes: dict[str, str] | None = None, provisional: set[str] | None = None) -> list[dict] | None:
    """Paragraph rows of one body; None (quarantined with the reason) when it cannot be trusted: over the size
    limit, unreadable, badly numbered, garbled or cut short. `doctypes`: the batch's (judgment_doctypes), else
    the body's metadata row is looked up."""
    reason = size_problem(SOURCE, "body", len(payload.body))
    if reason is None:
        try:
            parsed = parse_document(itemid, payload.body, payload.sha256)
        except Exception as exc:  # noqa: BLE001 - DocumentError, or a reader bug on this body: this body only
            reason = failure_reason(exc)
        else:
            return accept_body(con, run_id, itemid, payload, parsed, report, doctypes, provisional)
    quarantine_problem(con, run_id, "echr_paragraphs", ParseProblem(itemid, reason, payload.sha256), report,
                       "hudoc", counter="documents_quarantined")
    return None


def accept_body(con, run_id: int, itemid: str, payload: Payload, parsed, report: StageReport,
                doctypes: dict[str, str] | None = None, provisional: set[str] | None = None) -> list[dict] | None:
    """The paragraph rows of a body that parsed, or None (quarantined with the reason) when they cannot be
    trusted: badly numbered, garbled or cut short. A body found cut short without its metadata row (checked as a
    judgment) is judged provisionally: its hash goes into `provisional` (the ledger tries it again next run,
    when its metadata may say it is a decision)."""
    doctype = doctypes.get(itemid) if doctypes is not None else metadata_doctype(con, itemid)
    if doctype is None:
        report.add("bodies_without_metadata")
    numbering = [p for p in parsed.problems if not p.startswith("garbled text")]
    problems = (["paragraph numbering: " + "; ".join(numbering[:5])] if numbering else []) + \
        [p for p in parsed.problems if p.startswith("garbled text")] + \
        body_problems(doctype, parsed, numbering_ok=not numbering)
    if doctype is None and provisional is not None and body_problems(doctype, parsed, numbering_ok=not numbering):
        provisional.add(payload.sha256)
    if problems:
        quarantine_problem(con, run_id, "echr_paragraphs", ParseProblem(itemid, "; ".join(problems), payload.sha256),
                           report, "hudoc", counter="documents_quarantined")
        return None
    report.add("documents_parsed")
    report.add("paragraphs_parsed", len(parsed.rows))
    return parsed.rows


def load_paragraphs(con, run_id: int, rows: list[dict], report: StageReport, remake: bool = False):
    if not rows:
        return None
    outcome = gate_and_load(con, run_id, batch_frame(rows, PARAGRAPH_COLUMNS), PARAGRAPHS, remake=remake)
    outcome.report_to(report, "paragraphs_loaded", "paragraphs_quarantined", max_reasons=50,
                      changes_prefix="paragraphs_", records=False)
    return outcome


def replay_documents(con, archive: RawArchive, run_id: int, documents: dict[str, list[Path]],
                     report: StageReport, reparse: bool = False) -> None:
    """The first readable body per itemid (HTML before DOCX) goes through archive → parse → gate, in batches. The
    bodies are hashed first (a file unchanged since it was hashed is not read: caseforge.file_digests) and checked
    against the ledger in one query: a body this parser loaded whole before is not read again (its paragraphs count
    as unchanged)."""
    ledger = ParsedPayloads(con, SOURCE, BODY_PARSER, "echr_paragraphs", reparse)
    digests = FileDigests(con, SOURCE)
    found = []
    for itemid, paths in sorted(documents.items()):
        if len(paths) > 1:
            report.add("extra_bodies_ignored", len(paths) - 1)
        path = paths[0]
        too_big = size_problem(SOURCE, "body", path.stat().st_size)
        if too_big:
            quarantine_problem(con, run_id, "echr_paragraphs", ParseProblem(itemid, f"{path.name}: {too_big}"),
                               report, "hudoc", counter="documents_quarantined")
            continue
        kind = "docx" if path.suffix.lower() == ".docx" else "html"
        found.append((itemid, path, DigestedFile(f"{kind}/{itemid}", digests.sha256(path))))
    digests.save(report, "bodies_hashed")
    plan = ledger.plan([body for _, _, body in found])
    plan.report_to(report, unchanged="paragraphs_unchanged")
    todo = [(itemid, path, body) for itemid, path, body in found if body.key not in plan.skipped]
    progress = Progress("hudoc documents (parse)", total=len(todo), unit="documents")
    for batch in batches(todo, BATCH_SIZE):
        stored = archive.store_many(SOURCE, [(body.key, path.read_bytes(), path.resolve().as_uri(), None)
                                             for _, path, body in batch])
        payloads = {itemid: payload for (itemid, _, _), (payload, _) in zip(batch, stored)}
        doctypes = judgment_doctypes(con, list(payloads))
        rows: list[dict] = []
        provisional: set[str] = set()
        for itemid, payload in payloads.items():
            rows += parse_body(con, run_id, itemid, payload, report, doctypes, provisional) or []
            progress.step(1)
        remade = {p.sha256 for p in payloads.values()} & plan.remade
        outcome = load_paragraphs(con, run_id, rows, report, remake=bool(remade))
        ledger.settle_batch(run_id, ParsePlan(list(payloads.values()), {}, remade), rows, outcome, report,
                            provisional)
    progress.close()


def documents_to_fetch(con, limit: int) -> list[str]:
    return [row[0] for row in run_sql(con, "hudoc/documents_to_fetch.sql", {"limit": limit}).fetchall()]


def fetch_body(fetcher: Fetcher, con, run_id: int, itemid: str, report: StageReport) -> list[dict] | None:
    """HTML first; the DOCX route when the HTML is missing, empty, or yields no paragraphs."""
    params = {"library": "ECHR", "id": itemid}
    reasons = []
    fetched_any = False
    for kind, url in (("html", api() + HTML_PATH), ("docx", api() + DOCX_PATH)):
        try:
            result = fetcher.get(SOURCE, f"{kind}/{itemid}", url, params=params, kind="body")
        except FetchError as exc:
            reasons.append(f"{kind}: {exc.reason}")
            continue
        fetched_any = True
        report.add(f"{kind}_fetched")
        report.add("fetched")
        too_big = size_problem(SOURCE, "body", len(result.payload.body))
        if too_big:
            reasons.append(f"{kind}: {too_big}")
            continue
        try:
            parsed = parse_document(itemid, result.payload.body, result.payload.sha256, source_format=kind)
        except Exception as exc:  # noqa: BLE001 - DocumentError or a reader bug: try the other route
            reasons.append(f"{kind}: {failure_reason(exc)}")
            continue
        if not parsed.rows:
            reasons.append(f"{kind}: no paragraphs")
            continue
        return accept_body(con, run_id, itemid, result.payload, parsed, report)
    if fetched_any:                     # a body came but could not be used: bad data
        report.add("documents_quarantined")
        report.add("quarantined")
    else:                               # no route answered: a failed fetch, retried by the next run
        report.add("fetch_failed")
    report.fail(f"hudoc {itemid}: no usable body ({'; '.join(reasons)})")
    quarantine(con, run_id, "echr_paragraphs", "fetch", "; ".join(reasons), source_key=itemid)
    return None


def live_documents_batch(fetcher: Fetcher, con, run_id: int, itemids: list[str], report: StageReport) -> None:
    rows: list[dict] = []
    for itemid in itemids:
        rows += fetch_body(fetcher, con, run_id, itemid, report) or []
    load_paragraphs(con, run_id, rows, report)


# --- the refresh as a whole; the Prefect flow passes task-wrapped versions of these steps ---

def replay_metadata_step(session: RunSession, paths: list[Path], record_filter: meta.RecordFilter,
                         reparse: bool = False) -> None:
    replay_metadata(session.con, session.archive, session.run_id, paths, record_filter, session.report, reparse)


def replay_documents_step(session: RunSession, documents: dict, reparse: bool = False) -> None:
    replay_documents(session.con, session.archive, session.run_id, documents, session.report, reparse)


def live_metadata_step(session: RunSession, fetcher: Fetcher, since: date, until: date,
                       record_filter: meta.RecordFilter) -> None:
    live_metadata(fetcher, session.con, session.run_id, since, until, record_filter, session.report)


def live_documents_step(session: RunSession, fetcher: Fetcher, itemids: list[str]) -> None:
    live_documents_batch(fetcher, session.con, session.run_id, itemids, session.report)


@dataclass(frozen=True)
class Steps:
    replay_metadata: Callable = replay_metadata_step
    replay_documents: Callable = replay_documents_step
    live_metadata: Callable = live_metadata_step
    live_documents: Callable = live_documents_step


def refresh(settings: Settings, from_dir: str | None = None, since: str | None = None,
            doctypes: list[str] | None = None, languages: list[str] | None = None, documents: bool = True,
            max_documents: int = 5000, steps: Steps | None = None, transport=None, reparse: bool = False) -> StageReport:
    """Judgment metadata (query API paged by date windows, or replayed JSON) and judgment bodies
    (HTML, DOCX where the HTML is missing) split into paragraphs, each batch gated before curated. A replayed
    file this parser version loaded before is not parsed again (counted unchanged) unless `reparse`."""
    steps = steps or Steps()
    record_filter = meta.RecordFilter(tuple(doctypes) if doctypes is not None else ("HEJUD",),
                                      tuple(languages) if languages is not None else ("ENG",))
    with run_session(settings, "ingest", "hudoc") as session:
        report = session.report
        if from_dir:
            files = replay_files(Path(from_dir))
            report.add("listed", len(files.metadata) + len(files.documents))     # the folder's files (source health)
            steps.replay_metadata(session, files.metadata, record_filter, reparse)
            if documents:
                steps.replay_documents(session, files.documents, reparse)
        else:
            with Fetcher(settings, session.archive, transport=transport) as fetcher:
                start = incremental_since(session.con, since)
                until = date.today() + timedelta(days=1)
                log.info("hudoc: judgments from %s to %s", start, until)
                steps.live_metadata(session, fetcher, start, until, record_filter)
                if documents:
                    itemids = documents_to_fetch(session.con, max_documents)
                    progress = Progress("hudoc documents", total=len(itemids))
                    for batch in batches(itemids, BATCH_SIZE):
                        steps.live_documents(session, fetcher, batch)
                        progress.step(len(batch))
                    progress.close()
                report.add("http_requests", fetcher.stats.requests)
                report.add("http_retries", fetcher.stats.retries)
        report.counts.setdefault("new", 0)
        report.counts.setdefault("changed", 0)
    log.info("hudoc: %s", ", ".join(f"{k}={v}" for k, v in sorted(report.counts.items())))
    publish_counters("hudoc-documents", "HUDOC documents", report.counts, DOCUMENT_COUNTERS)
    publish_counters("hudoc-paragraphs", "HUDOC paragraphs", report.counts, PARAGRAPH_COUNTERS)
    return report
