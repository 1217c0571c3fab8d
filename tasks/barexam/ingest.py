"""Import Bar Exam QA from a folder: archive each file, parse, gate and curate. There is no live
source: the questions and passages come as files (reglab/barexam_qa)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import duckdb

from caseforge.archive import ParsedPayloads, RawArchive, size_problem
from caseforge.gate import ParseProblem, failure_reason, quarantine_problem
from caseforge.load import CuratedTable, gate_and_load
from caseforge.progress import Progress
from caseforge.session import RunSession, run_session
from caseforge.settings import Settings
from caseforge.stage_report import StageReport
from caseforge.tasks.barexam.parse import parse_passages, parse_questions

SOURCE = "barexam"
QUESTIONS_FILE = "barexam_qa.csv"
PASSAGE_GLOB = "passages_*.jsonl"
# The parsers (parse.py) and their version: bump it when they make other rows from the same file, so the next
# run parses every file again (ops.loaded_payloads).
PARSER = "barexam/1"


def _load(con, archive: RawArchive, run_id: int, path: Path, table: str, parser, curate_sql: str, key: str,
          report: StageReport, content_type: str, reparse: bool = False) -> None:
    too_big = size_problem(SOURCE, "file", path.stat().st_size)
    if too_big:
        quarantine_problem(con, run_id, table, ParseProblem(path.name, too_big), report, "barexam")
        return
    payload, _ = archive.store_file(SOURCE, path.name, path, content_type=content_type)
    ledger = ParsedPayloads(con, SOURCE, f"{PARSER} {table}", table, reparse)
    plan = ledger.plan([payload])
    plan.report_to(report, unchanged=f"{table}_unchanged")
    if not plan.parse:
        return
    try:
        frame, problems = parser(payload.body, payload.sha256)
    except Exception as exc:  # noqa: BLE001 - a file without its header or columns: this file only
        quarantine_problem(con, run_id, table, ParseProblem(path.name, failure_reason(exc), payload.sha256), report,
                           "barexam")
        ledger.settle(run_id, {payload: 0}, [], report)       # a known problem until the file changes
        return
    for problem in problems:
        where, _, reason = problem.partition(": ")
        quarantine_problem(con, run_id, table, ParseProblem(f"{path.name} {where}", reason, payload.sha256,
                                                            key=path.name), report, "barexam")
    outcome = gate_and_load(con, run_id, frame, CuratedTable(table, curate_sql, key, content_column="raw_sha256"))
    outcome.report_to(report, f"{table}_loaded", changes_prefix=f"{table}_")
    ledger.settle_batch(run_id, plan, frame, outcome, report)


def import_folder(con: duckdb.DuckDBPyConnection, archive: RawArchive, run_id: int, folder: Path,
                  report: StageReport, reparse: bool = False) -> None:
    """Each file archived, then parsed, gated and curated unless this parser loaded all of it before."""
    folder = Path(folder)
    questions = folder / QUESTIONS_FILE
    passages = sorted(folder.glob(PASSAGE_GLOB))
    if not questions.exists() and not passages:
        raise FileNotFoundError(f"{folder}: neither {QUESTIONS_FILE} nor {PASSAGE_GLOB} found")
    progress = Progress("barexam files (parse, gate)", total=len(passages) + questions.exists(), unit="files")
    for path in passages:
        _load(con, archive, run_id, path, "barexam_passages", parse_passages, "barexam/curate_passages.sql",
              "passage_id", report, "application/jsonl", reparse)
        progress.step(1)
    if questions.exists():
        _load(con, archive, run_id, questions, "barexam_questions", parse_questions, "barexam/curate_questions.sql",
              "question_id", report, "text/csv", reparse)
        progress.step(1)
    progress.close()


# --- the import as a whole; the Prefect flow passes a task-wrapped version of the step ---

def import_step(session: RunSession, folder: str, reparse: bool = False) -> None:
    import_folder(session.con, session.archive, session.run_id, Path(folder), session.report, reparse)


@dataclass(frozen=True)
class Steps:
    import_folder: Callable = import_step


def refresh(settings: Settings, from_dir: str, steps: Steps | None = None, reparse: bool = False) -> StageReport:
    """Archive, parse, gate and curate barexam_qa.csv and passages_*.jsonl from a folder; a file this parser
    version loaded before is not parsed again unless `reparse`."""
    steps = steps or Steps()
    with run_session(settings, "ingest", "barexam") as session:
        steps.import_folder(session, from_dir, reparse)
        session.report.counts.setdefault("new", 0)
        session.report.counts.setdefault("changed", 0)
    return session.report
