"""Chinese judgments stages: archive dump files, read records, parse, gate and load. No Prefect here."""
from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import duckdb
import pandas as pd

from caseforge.archive import ParsedPayloads, Payload, RawArchive, size_problem
from caseforge.artifacts import publish_table
from caseforge.fetch import Fetcher
from caseforge.file_digests import DigestedFile, FileDigests
from caseforge.gate import ParseProblem, failure_reason, quarantine, quarantine_problem
from caseforge.load import CuratedTable, batch_frame, batches, load_batch
from caseforge.progress import Progress
from caseforge.session import RunSession, run_session
from caseforge.settings import Settings
from caseforge.stage_report import StageReport
from caseforge.tasks.cn import curate
from caseforge.tasks.cn.api import WenshuClient, WenshuCredentials
from caseforge.tasks.cn.filters import FilterConfig, load_filter_config
from caseforge.tasks.cn.records import JudgmentRecord, parse_record, read_dump_rows, record_from_dict

log = logging.getLogger(__name__)

SOURCE = "cn"
TABLE = "cn_judgments"
BATCH_SIZE = 500
# The judgment parser (records.parse_record with sections.py) and its version: bump it when it makes other rows
# from the same record, so the next run parses every dump again (ops.loaded_payloads).
PARSER = "cn-judgment/1"
JUDGMENTS = CuratedTable(TABLE, "cn/curate_cn_judgments.sql", "doc_id", content_column="content_sha256", unit=("doc_id",))
DUMP_SUFFIXES = (".jsonl", ".json", ".csv", ".txt", ".ndjson")
COLUMNS = [
    "doc_id", "source_format", "case_name", "case_no", "case_year", "court_code", "case_kind", "case_seq",
    "court", "judgment_date", "doc_type", "case_type", "procedure", "simplified", "cause",
    "header", "parties", "procedure_record", "claims", "defense", "evidence", "facts", "reasoning",
    "judgment", "tail", "full_text", "complete", "gold_sections", "gold_agreement",
    "content_sha256", "raw_key", "raw_sha256",
]


def dump_files(directory: Path) -> list[Path]:
    """Dump files under a replay folder (JSONL/JSON/CSV and the old API's .txt scripts), sorted."""
    if not directory.is_dir():
        raise FileNotFoundError(f"--from-dir {directory} is not a folder")
    return sorted(p for p in directory.rglob("*") if p.is_file() and p.suffix.lower() in DUMP_SUFFIXES)


def archive_file(archive: RawArchive, directory: Path, path: Path) -> Payload:
    key = f"file/{path.relative_to(directory).as_posix()}"      # as load_dumps keys it
    payload, _ = archive.store_file(SOURCE, key, path)
    return payload


def read_records(name: str, raw: bytes) -> tuple[list[tuple[str, JudgmentRecord]], list[ParseProblem]]:
    """(where, record) for every record of one dump that can be read, and one problem (its line, record number
    or the file) for every one that cannot, whatever the failure: one bad line never loses the others. Pure."""
    try:
        rows, problems = read_dump_rows(name, raw)
    except Exception as exc:  # noqa: BLE001 - the file as a whole is unreadable (not text, not JSON)
        return [], [ParseProblem("", f"unreadable dump: {failure_reason(exc)}")]
    found = [ParseProblem(where, reason) for where, reason in problems]
    records = []
    for where, row in rows:
        if isinstance(row, JudgmentRecord):
            records.append((where, row))
            continue
        try:
            records.append((where, record_from_dict(row)))
        except Exception as exc:  # noqa: BLE001 - a record of the wrong shape: this record only
            found.append(ParseProblem(where, failure_reason(exc), row_data=row))
    order = {where: i for i, (where, _) in enumerate(rows)}
    found.sort(key=lambda p: (order.get(p.where, -1), _line(p.where)))
    return records, found


def _line(where: str) -> int:
    number = where.rsplit(" ", 1)[-1]
    return int(number) if number.isdigit() else 0


def records_of(con: duckdb.DuckDBPyConnection, run_id: int, payload: Payload,
               report: StageReport) -> Iterator[JudgmentRecord]:
    """Records of one archived dump; unreadable files and rows are quarantined with their file and line."""
    records, problems = read_records(payload.key, payload.body)
    for problem in problems:
        where = f"{payload.key} {problem.where}".rstrip()
        row = problem.row_data
        if row is not None and len(json.dumps(row, ensure_ascii=False, default=str)) > 100_000:
            row = {"row_json_start": json.dumps(row, ensure_ascii=False, default=str)[:100_000]}
        quarantine_problem(con, run_id, TABLE, ParseProblem(where, problem.reason, payload.sha256, row), report, "cn")
    for _, record in records:
        yield record


def content_sha(record: JudgmentRecord) -> str:
    body = json.dumps([record.doc_id, record.full_text, record.meta, record.gold, record.source_format],
                      ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def parse_batch(con: duckdb.DuckDBPyConnection, run_id: int, items: list[tuple[JudgmentRecord, Payload]],
                report: StageReport) -> pd.DataFrame:
    """Rows of the records that parse; a record the parser fails on is quarantined."""
    rows = []
    for record, payload in items:
        try:
            row = parse_record(record)
        except Exception as exc:  # noqa: BLE001 - a parser bug on one document must not lose the batch
            quarantine_problem(con, run_id, TABLE, ParseProblem(f"{payload.key}:{record.doc_id}", failure_reason(exc),
                                                                payload.sha256), report, "cn")
            continue
        row.update(content_sha256=content_sha(record), raw_key=payload.key, raw_sha256=payload.sha256)
        rows.append(row)
    report.add("parsed", len(rows))
    report.add("sections_found", sum(1 for row in rows for section in SECTIONS[:-1] if row.get(section)))
    return batch_frame(rows, COLUMNS, "doc_id", report)


def load_judgments(con: duckdb.DuckDBPyConnection, run_id: int, frame: pd.DataFrame, report: StageReport,
                   remake: bool = False):
    return load_batch(con, run_id, frame, JUDGMENTS, report, remake, loaded="loaded")


def batches_of_records(con: duckdb.DuckDBPyConnection, run_id: int, archive: RawArchive, directory: Path,
                       paths: list[Path], report: StageReport,
                       size: int = BATCH_SIZE) -> Iterator[list[tuple[JudgmentRecord, Payload]]]:
    """Archive each file, then yield its records in batches (a batch never spans two files' failures)."""
    batch: list[tuple[JudgmentRecord, Payload]] = []
    for path in paths:
        too_big = size_problem(SOURCE, "dump", path.stat().st_size)
        if too_big:
            key = f"file/{path.relative_to(directory).as_posix()}"
            quarantine_problem(con, run_id, TABLE, ParseProblem(key, too_big), report, "cn")
            continue
        payload = archive_file(archive, directory, path)
        report.add("files")
        for record in records_of(con, run_id, payload, report):
            report.add("records")
            batch.append((record, payload))
            if len(batch) >= size:
                yield batch
                batch = []
    if batch:
        yield batch


SECTIONS = ("header", "parties", "procedure_record", "claims", "defense", "evidence", "facts", "reasoning",
            "judgment", "tail", "complete")


@dataclass
class SectionCoverage:
    """How many of the judgments a run parsed have each section, by source format: the parser's health on what
    came in tonight, counted from the parsed rows. (It was the share over every curated judgment, read from the
    warehouse at every run: 0.7 CPU-s and 400 MB of a 500-judgment increment into 50,000.)"""

    counts: dict = field(default_factory=dict)      # source_format -> {"documents": n, section: n, ...}

    def add(self, frame: pd.DataFrame) -> None:
        for source_format, group in frame.groupby("source_format", dropna=False):
            seen = self.counts.setdefault(source_format, {"documents": 0, **{s: 0 for s in SECTIONS}})
            seen["documents"] += len(group)
            for section in SECTIONS:
                values = group[section]
                seen[section] += int(values.fillna(False).astype(bool).sum()) if section == "complete" \
                    else int(values.notna().sum())

    def rows(self) -> list[dict]:
        return [{"source_format": fmt, "documents": seen["documents"],
                 **{s: round(seen[s] / seen["documents"], 3) for s in SECTIONS}}
                for fmt, seen in sorted(self.counts.items(), key=lambda item: str(item[0]))]


def fetch_documents(client, con: duckdb.DuckDBPyConnection, run_id: int, doc_ids: list[str],
                    report: StageReport) -> list[tuple[JudgmentRecord, Payload]]:
    """Fetch documents by id through the user's session (tasks/cn/api.py); failures are quarantined."""
    from caseforge.fetch import FetchError
    from caseforge.tasks.cn.api import document_key

    fetched = []
    for doc_id in doc_ids:
        try:
            record, payload = client.fetch_document(doc_id)
        except FetchError as exc:
            report.add("fetch_failed")
            report.fail(f"cn {doc_id}: fetch failed: {exc.reason}")
            quarantine(con, run_id, TABLE, "fetch", exc.reason, source_key=document_key(doc_id))
            continue
        except Exception as exc:  # noqa: BLE001 - WenshuApiError, RecordError or a parser bug: this document only
            latest = client.fetcher.archive.latest(SOURCE, document_key(doc_id))
            quarantine_problem(con, run_id, TABLE, ParseProblem(document_key(doc_id), failure_reason(exc),
                                                                latest.sha256 if latest else None), report, "cn")
            continue
        report.add("fetched")
        fetched.append((record, payload))
    return fetched


def read_doc_ids(path: Path) -> list[str]:
    """One document id per line; blank lines and #-comments ignored, duplicates dropped in order."""
    ids = []
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        value = line.split("#", 1)[0].strip()
        if value and value not in ids:
            ids.append(value)
    return ids


# --- the refresh as a whole; the Prefect flow passes task-wrapped versions of these steps ---

def dump_batch_step(session: RunSession, batch: list, remake: bool = False,
                    coverage: SectionCoverage | None = None) -> set[str]:
    """Parse, gate and load one batch of records; returns the hashes of the dumps in it whose batch the gate
    rejected (none of it landed)."""
    frame = parse_batch(session.con, session.run_id, batch, session.report)
    if coverage is not None:
        coverage.add(frame)
    outcome = load_judgments(session.con, session.run_id, frame, session.report, remake)
    return outcome.rejected_sha256 if outcome is not None else set()


def api_batch_step(session: RunSession, client: WenshuClient, doc_ids: list[str], reparse: bool = False,
                   coverage: SectionCoverage | None = None) -> None:
    fetched = fetch_documents(client, session.con, session.run_id, doc_ids, session.report)
    ledger = ParsedPayloads(session.con, SOURCE, PARSER, TABLE, reparse)
    plan = ledger.plan([payload for _, payload in fetched])
    plan.report_to(session.report)
    items = [(record, payload) for record, payload in fetched if payload.key not in plan.skipped]
    frame = parse_batch(session.con, session.run_id, items, session.report)
    if coverage is not None:
        coverage.add(frame)
    outcome = load_judgments(session.con, session.run_id, frame, session.report, remake=bool(plan.remade))
    ledger.settle_batch(session.run_id, plan, frame, outcome, session.report)


def load_dumps(session: RunSession, directory: Path, paths: list[Path], steps: "Steps", reparse: bool = False,
               coverage: SectionCoverage | None = None) -> None:
    """Every dump file hashed (one unchanged since it was hashed is not read: caseforge.file_digests) and checked
    against the ledger in one query; each one this parser did not load whole before is archived and its records
    parsed, gated and loaded in batches. A dump is recorded as loaded with what it quarantined (a known problem
    is not read again), except one with a batch the gate rejected, which is read again next run."""
    report = session.report
    ledger = ParsedPayloads(session.con, SOURCE, PARSER, TABLE, reparse)
    digests = FileDigests(session.con, SOURCE)
    listed: dict[str, Path] = {}
    found = []
    try:
        for path in paths:
            key = f"file/{path.relative_to(directory).as_posix()}"
            too_big = size_problem(SOURCE, "dump", path.stat().st_size)
            if too_big:
                quarantine_problem(session.con, session.run_id, TABLE, ParseProblem(key, too_big), report, "cn")
                continue
            report.add("files")
            listed[key] = path
            found.append(DigestedFile(key, digests.sha256(path)))
    finally:
        digests.save(report)
    plan = ledger.plan(found)
    plan.report_to(report)
    progress = Progress("cn dumps (parse)", total=len(plan.parse), unit="files")
    for dump in plan.parse:
        load_dump(session, ledger, steps, directory, listed[dump.key], dump, dump.sha256 in plan.remade, coverage)
        progress.step(1)
    progress.close()


def load_dump(session: RunSession, ledger: ParsedPayloads, steps: "Steps", directory: Path, path: Path,
              hashed: DigestedFile, remade: bool, coverage: SectionCoverage | None) -> None:
    """One dump the ledger said to parse (`remade`: its rows are in curated already), as it was `hashed`."""
    report = session.report
    payload = archive_file(session.archive, directory, path)
    if payload.sha256 != hashed.sha256:            # rewritten since it was hashed: plan what was read
        again = ledger.plan([payload])
        if not again.parse:
            return
        remade = bool(again.remade)
    rejected: set[str] = set()
    items = [(record, payload) for record in records_of(session.con, session.run_id, payload, report)]
    report.add("records", len(items))
    for batch in batches(items, BATCH_SIZE):
        rejected |= steps.dump_batch(session, batch, remade, coverage)
    ledger.settle(session.run_id, {} if rejected else {payload: len(items)}, [payload] if rejected else [], report)


def filters_step(session: RunSession, config: FilterConfig) -> list[dict]:
    curate.apply_filters(session.con, config, session.report)
    return curate.filter_reason_counts(session.con, config)


def representatives_step(session: RunSession, config: FilterConfig, embedder: str, n: int, k: int,
                         seed: int) -> str | None:
    return curate.select(session.con, config, embedder, n, k, seed, session.report)


@dataclass(frozen=True)
class Steps:
    dump_batch: Callable = dump_batch_step
    api_batch: Callable = api_batch_step
    filters: Callable = filters_step
    representatives: Callable = representatives_step


def refresh(settings: Settings, from_dir: str | None = None, doc_ids: str | None = None, filters: str | None = None,
            select_n: int = 0, clusters: int = 10, embedder: str = "tfidf-char", seed: int = 0,
            steps: Steps | None = None, reparse: bool = False) -> StageReport:
    """Import judgment dumps under `from_dir` (and/or documents listed in `doc_ids`, fetched with the
    user's own session, see tasks/cn/api.py), parse sections, gate and upsert; filter; optionally select.

    Every dump file is archived before parsing; unreadable files and rows are quarantined with
    their reason; a dump this parser version loaded whole before is not parsed again (unless `reparse`).
    Filters decide the judgments that are new or were loaded again, and with select_n > 0 the kept ones
    are embedded and select_n representatives are picked across `clusters` K-Means clusters.
    """
    steps = steps or Steps()
    config = load_filter_config(filters)
    coverage = SectionCoverage()
    with run_session(settings, "ingest", "cn") as session:
        report = session.report
        if from_dir:
            directory = Path(from_dir)
            dumps = dump_files(directory)
            report.add("listed", len(dumps))            # the folder's dump files (source health)
            load_dumps(session, directory, dumps, steps, reparse, coverage)
        if doc_ids:
            ids = read_doc_ids(Path(doc_ids))
            report.add("listed", len(ids))
            with Fetcher(settings, session.archive) as fetcher:
                client = WenshuClient(fetcher, WenshuCredentials.from_env())
                for batch in batches(ids, BATCH_SIZE):
                    steps.api_batch(session, client, batch, reparse, coverage)
                report.add("http_requests", fetcher.stats.requests)
                report.add("http_retries", fetcher.stats.retries)
        report.counts.setdefault("new", 0)
        report.counts.setdefault("changed", 0)
        reasons = steps.filters(session, config)
        if select_n > 0:
            steps.representatives(session, config, embedder, select_n, clusters, seed)
    log.info("cn: %s", ", ".join(f"{k}={v}" for k, v in sorted(report.counts.items())))
    publish_table("cn-section-coverage", coverage.rows(),
                  "Share of the judgments this run parsed with each section, by source format")
    publish_table("cn-filter-reasons", reasons, f"Documents excluded by filter {config.key}, per reason")
    return report
