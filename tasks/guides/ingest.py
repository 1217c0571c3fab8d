"""Guide stages: source files (PDF / text / page CSV) → paragraphs → citations → resolution. No Prefect here."""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import duckdb
import pandas as pd

from caseforge.archive import ParsedPayloads, Payload, RawArchive, size_problem
from caseforge.artifacts import publish_counters, publish_markdown, publish_table
from caseforge.fetch import Fetcher, FetchError
from caseforge.gate import ParseProblem, failure_reason, quarantine, quarantine_problem
from caseforge.load import CuratedTable, batch_frame, gate_and_load
from caseforge.progress import Progress
from caseforge.session import RunSession, run_session
from caseforge.settings import Settings, upstream
from caseforge.stage_report import StageReport
from caseforge.tasks.guides import citations as cites
from caseforge.tasks.guides.pages import GuidePage, read_pages
from caseforge.tasks.guides.paragraphs import COLUMNS as PARAGRAPH_COLUMNS, parse_guide
from caseforge.tasks.guides.resolve import Resolver, load_french_map
from caseforge.warehouse.statements import run_sql

log = logging.getLogger(__name__)

SOURCE = "guides"
KS_DOCUMENTS = "/documents/d/echr-ks/{guide_id}"      # under [upstream] guides
DEFAULT_GUIDES = ("guide_art_2_eng", "guide_art_3_eng", "guide_art_5_eng", "guide_art_6_criminal_eng",
                  "guide_art_6_eng", "guide_art_8_eng", "guide_art_10_eng", "guide_art_14_art_1_protocol_12_eng")
FRENCH_MAP_NAME = "french_to_english_citations.csv"
CITATION_COLUMNS = cites.COLUMNS + ["itemid", "resolution_method", "linked_title", "unresolved_reason", "raw_sha256"]
GUIDE_SUFFIXES = (".pdf", ".txt", ".csv")
# The guide parser (pages.py, paragraphs.py, citations.py, resolve.py) and its version: bump it when it makes
# other rows from the same guide, so the next run parses every guide again (ops.loaded_payloads). What the
# resolver reads (judgment names, the French table) is part of the name: new judgments parse the guides again.
PARSER = "guides/1"
PARAGRAPHS = CuratedTable("guide_paragraphs", "guides/curate_guide_paragraphs.sql", "para_no",
                          content_column="raw_sha256", change_key=("guide_id", "para_no"))
CITATIONS = CuratedTable("guide_citations", "guides/curate_guide_citations.sql", "raw_citation")


@dataclass
class GuideSource:
    guide_id: str
    payload: Payload


def guide_id_from_name(name: str) -> str:
    """'guide_art_2_pages_first.csv' → 'guide_art_2'; 'guide_art_2_eng.pdf' → 'guide_art_2_eng'."""
    stem = Path(name).stem
    return re.sub(r"_pages(?:_\w+)?$", "", stem)


def replay_sources(archive: RawArchive, directory: Path, report: StageReport,
                   too_big: list[ParseProblem] | None = None) -> tuple[list[GuideSource], Path | None]:
    """The guide files under a replay folder, archived, and the French → English table if there is one. A guide
    over the size limit is left unread and its problem appended to `too_big` (only counted without it)."""
    if not directory.is_dir():
        raise FileNotFoundError(f"--from-dir {directory} is not a folder")
    sources, french = [], None
    for path in sorted(p for p in directory.rglob("*") if p.suffix.lower() in GUIDE_SUFFIXES):
        if path.name == FRENCH_MAP_NAME:
            french = path
            continue
        guide_id = guide_id_from_name(path.name)
        over = size_problem(SOURCE, "guide", path.stat().st_size)
        if over:
            report.add("guide_files")
            if too_big is not None:
                too_big.append(ParseProblem(guide_id, f"{path.name}: {over}"))
            continue
        payload, _ = archive.store_file(SOURCE, f"file/{path.name}", path)
        report.add("guide_files")
        sources.append(GuideSource(guide_id, payload))
    return sources, french


def fetch_sources(fetcher: Fetcher, con, run_id: int, guide_ids: list[str], report: StageReport) -> list[GuideSource]:
    sources = []
    for guide_id in guide_ids:
        url = upstream("guides") + KS_DOCUMENTS.format(guide_id=guide_id)
        try:
            result = fetcher.get(SOURCE, f"pdf/{guide_id}", url, kind="guide")
        except FetchError as exc:
            report.add("guides_fetch_failed")
            report.fail(f"guide {guide_id}: fetch failed: {exc.reason}")
            quarantine(con, run_id, "guide_paragraphs", "fetch", exc.reason, source_key=guide_id)
            continue
        report.add("guides_fetched")
        report.add("fetched")
        sources.append(GuideSource(guide_id, result.payload))
    return sources


def store_translations(con: duckdb.DuckDBPyConnection, archive: RawArchive, path: Path, report: StageReport) -> None:
    payload, _ = archive.store_file(SOURCE, f"file/{path.name}", path, content_type="text/csv")
    mapping, refused = load_french_map(payload.body)
    frame = pd.DataFrame([(fre, eng, name) for fre, (eng, name) in mapping.items()],
                         columns=["fre_id", "eng_id", "eng_docname"])
    con.register("translations_frame", frame)
    try:
        run_sql(con, "guides/store_translations.sql")
    finally:
        con.unregister("translations_frame")
    report.add("translations_loaded", len(mapping))
    report.add("translations_refused", len(refused))


def make_resolver(con: duckdb.DuckDBPyConnection) -> Resolver:
    translations = {fre: (eng, name or "") for fre, eng, name in run_sql(con, "guides/translations.sql").fetchall()}
    resolver = Resolver(translations)
    for itemid, docname, year in run_sql(con, "guides/judgment_names.sql").fetchall():
        resolver.add_judgment(itemid, docname, year)
    return resolver


def page_links(pages: list[GuidePage], numbers: list[int]) -> dict[str, str | None]:
    by_number = {page.number: page.links for page in pages}
    links: dict[str, str | None] = {}
    for number in numbers:
        links.update(by_number.get(number, {}))
    return links


def parse_guide_source(source: GuideSource, resolver: Resolver) -> tuple[list[dict], list[dict], list[ParseProblem],
                                                                       dict]:
    """(paragraph rows, resolved citation rows, problems, counts) of one guide. Pure. A guide that cannot be read,
    whose size is over the limit, or whose parse lost most of the document gives no rows and one problem naming
    the guide. A citation whose year the extraction cut lands with no year; `counts` says how many."""
    name = source.payload.key.split("/", 1)[-1]
    reason = size_problem(SOURCE, "guide", len(source.payload.body))
    parsed = None
    if reason is None:
        try:
            pages = read_pages(source.payload.body, name if "." in name else name + ".pdf")
            parsed = parse_guide(source.guide_id, pages, source.payload.sha256)
            reason = "; ".join(parsed.problems) or None
            rows = cites.citation_rows(source.guide_id, parsed.rows)
            pages_of = {row["para_no"]: row["pages"] for row in parsed.rows}
            for row in rows:
                row.update(resolver.resolve(row, page_links(pages, pages_of[row["para_no"]])))
                row["raw_sha256"] = source.payload.sha256
        except Exception as exc:  # noqa: BLE001 - GuideSourceError, or a parser bug on this guide: this guide only
            reason = failure_reason(exc)
    if reason is not None:
        return [], [], [ParseProblem(source.guide_id, reason, source.payload.sha256)], {}
    for row in rows:
        if row.get("problem"):
            log.warning("guide %s § %s citation %s (%s): %s; it lands without a year", source.guide_id,
                        row["para_no"], row["ordinal"], row["raw_citation"], row["problem"])
    counts = {"guide_paragraphs_parsed": len(parsed.rows), "guide_lines_outside_paragraphs": parsed.dropped_lines,
              "guide_pages_parsed": len({page for row in parsed.rows for page in row.get("pages") or ()}),
              "citations_parsed": len(rows), "citations_resolved": sum(1 for r in rows if r["itemid"]),
              "citations_without_year": sum(1 for r in rows if r.get("problem"))}
    return parsed.rows, rows, [], counts


def parse_source(con, run_id: int, source: GuideSource, resolver: Resolver,
                 report: StageReport) -> tuple[list[dict], list[dict]] | None:
    """(paragraph rows, resolved citation rows) of one guide; None when it is quarantined."""
    paragraphs, citations, problems, counts = parse_guide_source(source, resolver)
    if not paragraphs:
        for problem in problems:
            quarantine_problem(con, run_id, "guide_paragraphs", problem, report, "guide", counter="guides_quarantined")
        return None
    report.add("guides_parsed")
    for name, value in counts.items():
        report.add(name, value)
    return paragraphs, citations


def load_guide(con, run_id: int, paragraphs: list[dict], citations: list[dict], report: StageReport) -> set[str]:
    """Gate and load one guide's paragraphs and citations (each replaced only where this parse made them
    otherwise); returns the hashes of guides in a batch the gate rejected (none of it landed)."""
    outcome = gate_and_load(con, run_id, batch_frame(paragraphs, PARAGRAPH_COLUMNS), PARAGRAPHS)
    outcome.report_to(report, "guide_paragraphs_loaded", "guide_paragraphs_quarantined", max_reasons=50,
                      changes_prefix="guide_paragraphs_")
    rejected = set(outcome.rejected_sha256)
    if not citations:
        return rejected
    outcome = gate_and_load(con, run_id, batch_frame(citations, CITATION_COLUMNS), CITATIONS)
    outcome.report_to(report, "citations_loaded", "citations_quarantined", max_reasons=50, records=False)
    return rejected | outcome.rejected_sha256


def resolution_rates(con) -> list[dict]:
    cursor = run_sql(con, "guides/resolution_rate.sql")
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


# --- the refresh as a whole; the Prefect flow passes a task-wrapped version of the step ---

def parse_and_load_step(session: RunSession, sources: list[GuideSource], reparse: bool = False) -> None:
    """Parse, resolve, gate and load each guide, except those this parser loaded whole before against the same
    judgments (their paragraphs count as unchanged)."""
    con, report = session.con, session.report
    resolver_inputs = run_sql(con, "guides/resolver_fingerprint.sql").fetchone()[0]
    ledger = ParsedPayloads(con, SOURCE, f"{PARSER} resolver={resolver_inputs}", "guide_paragraphs", reparse,
                            gated=(CITATIONS.name,))
    plan = ledger.plan([source.payload for source in sources])
    plan.report_to(report, unchanged="guide_paragraphs_unchanged")
    todo = [source for source in sources if source.payload.key not in plan.skipped]
    if not todo:
        return
    resolver = make_resolver(con)
    with Progress("guides (parse, resolve, gate)", total=len(todo), unit="guides") as progress:
        for source in todo:
            parsed = parse_source(con, session.run_id, source, resolver, report)
            rejected = load_guide(con, session.run_id, *parsed, report) if parsed else set()
            if source.payload.sha256 in rejected:
                ledger.settle(session.run_id, {}, [source.payload])
            else:                        # loaded, or quarantined whole (a known problem until the guide changes)
                ledger.settle(session.run_id, {source.payload: len(parsed[0]) if parsed else 0}, [], report)
            progress.step(1)


@dataclass(frozen=True)
class Steps:
    parse_and_load: Callable = parse_and_load_step


def refresh(settings: Settings, from_dir: str | None = None, guide_ids: list[str] | None = None,
            french_map: str | None = None, steps: Steps | None = None, transport=None,
            reparse: bool = False) -> StageReport:
    """Guides → paragraphs (headers removed, page breaks joined) → citations → itemids (links on the
    page first, then name + year against curated.echr_judgments), each table gated before curated. A guide
    this parser version loaded before, against the same judgments, is not parsed again unless `reparse`."""
    steps = steps or Steps()
    with run_session(settings, "ingest", "guides") as session:
        report = session.report
        french = Path(french_map) if french_map else None
        if from_dir:
            too_big: list[ParseProblem] = []
            sources, found = replay_sources(session.archive, Path(from_dir), report, too_big)
            for problem in too_big:
                quarantine_problem(session.con, session.run_id, "guide_paragraphs", problem, report, "guide",
                                   counter="guides_quarantined")
            french = french or found
            report.add("listed", len(sources) + len(too_big))       # the folder's guides (source health)
        else:
            report.add("listed", len(guide_ids or DEFAULT_GUIDES))
            with Fetcher(settings, session.archive, transport=transport) as fetcher:
                sources = fetch_sources(fetcher, session.con, session.run_id, list(guide_ids or DEFAULT_GUIDES),
                                        report)
                report.add("http_requests", fetcher.stats.requests)
        if french:
            store_translations(session.con, session.archive, french, report)
        steps.parse_and_load(session, sources, reparse)
        report.counts.setdefault("new", 0)
        report.counts.setdefault("changed", 0)
        rates = resolution_rates(session.con)
        for rate in rates:
            log.info("guides: %s resolved %s of %s citations (%.1f%%)", rate["guide_id"], rate["resolved"],
                     rate["citations"], 100 * float(rate["resolution_rate"]))
    log.info("guides: %s", ", ".join(f"{k}={v}" for k, v in sorted(report.counts.items())))
    _publish(report, rates)
    return report


def _publish(report: StageReport, rates: list[dict]) -> None:
    publish_counters("guides-documents", "Guides read", report.counts,
                     ("guide_files", "guides_fetched", "guides_parsed", "guides_quarantined"))
    publish_counters("guides-paragraphs", "Guide paragraphs", report.counts,
                     ("guide_paragraphs_parsed", "guide_paragraphs_loaded", "guide_paragraphs_quarantined"))
    publish_counters("guides-citations", "Guide citations", report.counts,
                     ("citations_parsed", "citations_resolved", "citations_loaded", "citations_quarantined"))
    rows = [{k: (float(v) if hasattr(v, "as_integer_ratio") and not isinstance(v, int) else v) for k, v in r.items()}
            for r in rates]
    publish_table("guides-resolution-rate", rows,
                  "Citations resolved to a HUDOC itemid, per guide (sql/guides/resolution_rate.sql)")
    lines = "\n".join(f"- {r['guide_id']}: {r['resolved']}/{r['citations']} ({float(r['resolution_rate']):.1%})"
                      for r in rates)
    publish_markdown("guides-resolution-summary", f"## Resolution rate\n\n{lines or 'no citations'}")
