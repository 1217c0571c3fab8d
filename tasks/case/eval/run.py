"""One Bar Exam QA evaluation run: CASE or a baseline on curated.barexam_questions → scores in the
evaluation store (caseforge.evalstore) and exported files. Plain steps; the flow makes them tasks."""
from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from caseforge import evalstore
from caseforge.artifacts import publish_metrics
from caseforge.llm.config import Backends
from caseforge.retrieval import build_retriever
from caseforge.retrieval.corpora import barexam_corpus
from caseforge.session import RunSession, run_session
from caseforge.settings import Settings
from caseforge.stage_report import StageReport
from caseforge.tasks.case.eval import barexam
from caseforge.warehouse.statements import run_sql

log = logging.getLogger(__name__)

TASK = "barexam"
DATASET = "curated.barexam_questions"


@dataclass(frozen=True)
class Options:
    system: str
    llm: str | None = None            # None: the settings' choice for the evaluated system
    model: str | None = None
    k: int = 5
    limit: int | None = None
    replay_file: str | None = None
    retriever: str = "bm25"
    max_rounds: int = 2
    seed: int = 0
    index_dir: str | None = None
    mu: float = 2000.0
    rrf_k: int = 60
    dense_model: str | None = None
    out_dir: str | None = None

    @property
    def retriever_used(self) -> str | None:
        return barexam.BASELINES.get(self.system) or (self.retriever if self.system == "case" else None)

    def params(self) -> dict:
        choice = Backends(self.llm, {"system": self.model}).choice("barexam-case", "system")
        params = {"k": self.k, "limit": self.limit, "llm": choice.backend, "model": choice.model}
        if self.system in ("llm-only", "oracle"):
            params.pop("k")
        used = self.retriever_used
        if used:
            params["retriever"] = used
            if used == "qlm":
                params["mu"] = self.mu
            if used == "hybrid":
                params["rrf_k"] = self.rrf_k
        if self.system == "case":
            params.update({"max_rounds": self.max_rounds, "seed": self.seed})
        return params


def questions_sha(rows: list[tuple]) -> str:
    """What the run was asked: every question row, in order."""
    return hashlib.sha256(json.dumps(rows, default=str, ensure_ascii=False).encode()).hexdigest()


def answer_step(session: RunSession, options: Options, problems, gold_passages):
    corpus = barexam_corpus(session.con)
    retriever = None
    if options.retriever_used:
        retriever = build_retriever(options.retriever_used, corpus, options.index_dir, mu=options.mu,
                                    rrf_k=options.rrf_k, dense_model=options.dense_model)
    step = "barexam-case" if options.system == "case" else f"barexam-{options.system}"
    backend = Backends(options.llm, {"system": options.model}, replay_file=options.replay_file).for_step(step, "system")
    if options.system == "case":
        return barexam.run_case(session.con, backend, problems, retriever, options.k, options.max_rounds,
                                options.seed, session.report)
    return barexam.run_baseline(session.con, backend, problems, options.system, options.k, session.report,
                                retriever=retriever, passage_text=dict(zip(corpus.ids, corpus.texts)),
                                gold_passages=gold_passages)


@dataclass(frozen=True)
class Steps:
    answer: Callable = answer_step


def evaluate(settings: Settings, options: Options, steps: Steps | None = None) -> StageReport:
    """Answer every question with the system and score accuracy (overall, unanimous and split juries for CASE).
    The report's results carry the evaluation run id."""
    steps = steps or Steps()
    if options.system not in barexam.SYSTEMS:
        raise ValueError(f"unknown system {options.system!r} (choose from {', '.join(barexam.SYSTEMS)})")
    started = datetime.now(timezone.utc)
    params = options.params()
    with run_session(settings, "eval", f"barexam:{options.system}") as session:
        rows = run_sql(session.con, "barexam/questions.sql").fetchall()
        if not rows:
            raise RuntimeError("no Bar Exam questions in curated.barexam_questions: run `caseforge ingest barexam` first")
        rows = rows[:options.limit] if options.limit else rows
        dataset_sha = questions_sha(rows)
        run_id = evalstore.eval_run_id(TASK, options.system, dataset_sha, params)
        session.report.results["eval_run_id"] = run_id
        problems, gold_passages = barexam.problems_from_rows(rows)
        items = steps.answer(session, options, problems, gold_passages)
        if options.system != "case":       # a baseline's reply carries its reasoning; a degenerate one fails the item
            items = evalstore.gate_outputs(session.con, session.run_id, barexam.ANSWERS_SUITE, items,
                                           {"reasoning": "reasoning"}, barexam.FAILED_SCORES)
        metrics = barexam.summarise(items)
        for item in items:
            if item.status == "failed":
                session.report.fail(f"{item.item_id}: {item.reason}")
        session.report.add("scored", len(items))
        evalstore.save_run(session.con, run_id, TASK, options.system, DATASET, dataset_sha, params, items, metrics,
                           started)
        label = "oracle (gold passage given, not flagged as gold)" if options.system == "oracle" else options.system
        header = {"task": TASK, "system": options.system, "params": params, "label": label}
        out_dir = Path(options.out_dir) if options.out_dir else settings.reports_dir / "barexam"
        paths = evalstore.export_run(out_dir, run_id, header, items, metrics)
        log.info("barexam %s: accuracy %.3f on %d; exported %s", options.system, metrics["accuracy"], len(items),
                 ", ".join(map(str, paths)))
        publish_metrics(f"barexam-{options.system}", f"Bar Exam {options.system}", metrics)
    return session.report
