"""One AQuAECHR evaluation run as plain steps (items → a system's answers → scores in the evaluation
store, a report and a CSV), and the quality judge's agreement with expert scores. The flows make the
steps tasks."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from caseforge import evalstore
from caseforge.artifacts import publish_markdown
from caseforge.evalstore import ItemResult
from caseforge.families import check_families
from caseforge.llm.config import Backends
from caseforge.session import RunSession, run_session
from caseforge.settings import Settings
from caseforge.stage_report import StageReport
from caseforge.tasks.aquaechr.eval import judge_agreement, store
from caseforge.tasks.aquaechr.eval.items import build_passages, db_paragraphs, load_annotation_file, load_db_items
from caseforge.tasks.aquaechr.eval.metrics import TokenEmbedder
from caseforge.tasks.aquaechr.eval.nli import NLI_STEP, make_nli
from caseforge.tasks.aquaechr.eval.pipeline import RunConfig, default_bertscore_model
from caseforge.tasks.aquaechr.eval.pipeline import evaluate as evaluate_items
from caseforge.tasks.aquaechr.filters import DEFAULT_LOW_QUALITY_AT, DIMENSIONS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Options:
    system: str
    llm: str | None = None            # None: the settings' choice for the evaluated system
    model: str | None = None
    replay_file: str | None = None
    items_file: str | None = None
    names_file: str | None = None
    nli: str = "llm"
    nli_model: str | None = None
    k: int = 5
    retriever: str = "bm25"
    max_rounds: int = 2
    limit: int | None = None
    bertscore_model: str | None = None
    no_bertscore: bool = False
    index_dir: str | None = None
    dense_model: str | None = None
    out_dir: str | None = None


def _backend(llm: str | None, model: str | None, replay_file: str | None, step: str, role: str):
    return Backends(llm, {role: model}, replay_file=replay_file).for_step(step, role)


def nli_backend(options: Options, answering):
    """The LLM NLI judge: --nli-model, else the settings' `nli` role; a backend with no model for that role
    (replay, openai without one configured) falls back to the answering model (with a family warning)."""
    try:
        return _backend(options.llm, options.nli_model, options.replay_file, NLI_STEP, "nli")
    except ValueError:
        return answering


def load_items_step(session: RunSession, options: Options):
    if options.items_file:
        items_file = Path(options.items_file)
        if not items_file.is_file():
            raise FileNotFoundError(f"items file not found: {items_file}")
        names = Path(options.names_file) if options.names_file else items_file.with_name("caseid_to_name.json")
        items, problems = load_annotation_file(items_file, names)
        dataset = items_file.name
    else:
        items, problems = load_db_items(session.con)
        dataset = "curated.aquaechr_qa"
    passages = build_passages(items, db_paragraphs(session.con))
    session.report.add("items", len(items))
    session.report.add("items_rejected", len(problems))
    session.report.add("passages", len(passages.passages))
    return items, problems, passages, dataset


def evaluate_step(session: RunSession, config: RunConfig, items, passages, backend, nli, embed, problems):
    return evaluate_items(session.con, config, items, passages, backend, nli, embed, problems)


@dataclass(frozen=True)
class Steps:
    load_items: Callable = load_items_step
    evaluate: Callable = evaluate_step


def evaluate(settings: Settings, options: Options, steps: Steps | None = None) -> StageReport:
    """Run `options.system` with `options.model` on the items and score it; the report's results carry
    the evaluation run id and the report file."""
    steps = steps or Steps()
    backend = _backend(options.llm, options.model, options.replay_file, f"aquaechr-eval-{options.system}", "system")
    embed, bert_label, bert_reason = None, None, "disabled by --no-bertscore"
    if not options.no_bertscore:
        path, bert_reason = (options.bertscore_model, None) if options.bertscore_model else default_bertscore_model()
        if path:
            embed = TokenEmbedder(path)
            bert_label = embed.label
    with run_session(settings, "eval", f"aquaechr:{options.system}") as session:
        items, problems, passages, dataset = steps.load_items(session, options)
        if not items:
            session.report.fail(f"no items to evaluate in {dataset}")
            return session.report
        judge_backend = nli_backend(options, backend) if options.nli == "llm" else None
        judge = make_nli(options.nli, session.con, judge_backend)
        if options.nli == "llm" and check_families(backend.model, judge_backend.model, allow_same=True,
                                                   roles=("answering model", "NLI judge")):
            session.report.add("nli_judge_family_warning")
        config = RunConfig(system=options.system, llm=backend.name, model=backend.model, nli=judge.name,
                           dataset=dataset, k=options.k, retriever=options.retriever, max_rounds=options.max_rounds,
                           limit=options.limit, bertscore_model=bert_label, bertscore_skip_reason=bert_reason,
                           index_dir=options.index_dir, dense_model=options.dense_model)
        result = steps.evaluate(session, config, items, passages, backend, judge, embed, problems)
        session.report.results["eval_run_id"] = result.run_id
        for line in result.problems:
            session.report.fail(line)
        for line in result.warnings:
            log.warning(line)
        session.report.add("warnings", len(result.warnings))
        session.report.add("scored", int(result.metrics["n"]))
        out_dir = Path(options.out_dir) if options.out_dir else settings.reports_dir / "aquaechr"
        md, csv_path = store.write_report(session.con, out_dir)
        session.report.results["report"] = str(md)
        publish_markdown("aquaechr-report", md.read_text(encoding="utf-8"),
                         f"AQuAECHR metrics (latest run per configuration); CSV: {csv_path}")
        log.info("aquaechr %s: corpus = %s; report %s, csv %s", options.system, passages.description, md, csv_path)
    return session.report


JUDGE_TASK = "aquaechr-judge"


def judge_agreement_step(session: RunSession, judge_backend, gold, low_quality_at: int,
                         convention: str = judge_agreement.DEFAULT_CONVENTION):
    return judge_agreement.evaluate(session.con, judge_backend, gold, low_quality_at, convention)


def _write_judge_card(settings: Settings, card, report: StageReport) -> None:
    """The judge card as Markdown with its confusion matrices beside it: <reports>/aquaechr-filter/."""
    from caseforge.outputs import check_output_path

    folder = check_output_path(settings.reports_dir / "aquaechr-filter", settings, "the judge card")
    (folder / "judge").mkdir(parents=True, exist_ok=True)
    (folder / "judge_card.md").write_text(card.markdown("#") + "\n", encoding="utf-8")
    if card.picture:
        (folder / "judge" / "confusion.png").write_bytes(card.picture)
    report.results["judge_card_path"] = str(folder / "judge_card.md")


@dataclass(frozen=True)
class JudgeSteps:
    judge: Callable = judge_agreement_step


def evaluate_judge(settings: Settings, gold_file: str, llm: str | None = None, model: str | None = None,
                   replay_file: str | None = None, low_quality_at: int = DEFAULT_LOW_QUALITY_AT,
                   steps: JudgeSteps | None = None, convention: str = judge_agreement.DEFAULT_CONVENTION) -> StageReport:
    """The quality judge's F1 against expert 1–5 scores under `convention` (judge_agreement.CONVENTIONS), with
    the F1 of a judge always answering "high" next to each, stored as an evaluation run."""
    if convention not in judge_agreement.CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r} (choose from {', '.join(judge_agreement.CONVENTIONS)})")
    steps = steps or JudgeSteps()
    path = Path(gold_file)
    gold = judge_agreement.read_gold(path)
    judge_backend = _backend(llm, model, replay_file, "aquaechr-judge", "judge")
    started = datetime.now(timezone.utc)
    with run_session(settings, "eval", "aquaechr:judge") as session:
        result = steps.judge(session, judge_backend, gold, low_quality_at, convention)
        sha = judge_agreement.gold_sha(gold)
        params = {"llm": judge_backend.name, "model": judge_backend.model, "low_quality_at": low_quality_at,
                  "convention": convention}
        run_id = evalstore.eval_run_id(JUDGE_TASK, judge_backend.model, sha, params)
        metrics: dict[str, float] = {"n": float(result.judged)}
        notes = {}
        for name, confusion in result.per_dimension.items():
            metrics[f"f1_{name}"] = confusion.f1
            metrics[f"baseline_always_high_f1_{name}"] = result.baseline[name].f1
            notes[f"f1_{name}"] = result.positive()
            metrics.update({f"{count}_{name}": float(getattr(confusion, count)) for count in ("tp", "fp", "fn", "tn")})
        notes["f1_overall"] = f"{result.positive()}; {result.lines()[1]}"
        items = [ItemResult(pair.key, None, {d: pair.scores[d] for d in DIMENSIONS},
                            result.predicted.get(pair.key) or {}, {},
                            "ok" if pair.key in result.predicted else "failed",
                            None if pair.key in result.predicted else "the judge gave no valid scores")
                 for pair in gold]
        evalstore.save_run(session.con, run_id, JUDGE_TASK, judge_backend.model, path.name, sha, params, items,
                           metrics, started, backend=judge_backend.name, model=judge_backend.model, notes=notes)
        card = judge_agreement.judge_card(session.con, gold, result.predicted, settings.file.review)
        session.report.results.update({"eval_run_id": run_id, "lines": result.lines() + [""] + card.lines(),
                                       "judge_card": card.as_dict()})
        _write_judge_card(settings, card, session.report)
        session.report.add("judged", result.judged)
        for failure in result.failures:
            session.report.fail(failure)
    return session.report
