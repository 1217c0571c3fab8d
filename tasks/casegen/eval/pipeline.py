"""CaseGen evaluation as plain steps: generate drafts, judge them, score them, report; the Prefect flow
passes task-wrapped versions of the steps."""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from caseforge.config import Settings
from caseforge.llm.config import Backends
from caseforge.session import RunSession, run_session
from caseforge.runs import StageReport
from caseforge.tasks.casegen.eval import evaluate, metrics
from caseforge.tasks.casegen.eval import report as reporting
from caseforge.tasks.casegen.eval.judge import check_judge_family

log = logging.getLogger(__name__)
# the LLM steps of the evaluation and their roles (caseforge.llm.config)
GENERATE_STEP, JUDGE_STEP = evaluate.GENERATE_STEP, evaluate.JUDGE_STEP
LLM_STEPS = {GENERATE_STEP: "system", JUDGE_STEP: "judge"}

@dataclass
class EvalParams:
    models: list[str]
    llm: str | None
    judge_model: str | None
    judge_llm: str | None = None
    replay_file: str | None = None
    judge_replay_file: str | None = None
    task: str | None = None
    limit: int | None = None
    config: evaluate.EvalConfig = field(default_factory=evaluate.EvalConfig)
    bert_model: str | None = None
    human_scores: str | None = None
    out_dir: str = "data/reports/casegen"
    allow_same_family: bool = False
    plots: bool = True
    backend_options: dict = field(default_factory=dict)


def make_params(models: list[str] | None = None, llm: str | None = None, judge_model: str | None = None,
                judge_llm: str | None = None,
                replay_file: str | None = None, judge_replay_file: str | None = None, task: str | None = None,
                limit: int | None = None, max_input_chars: int = 8000, max_input_tokens: int | None = None,
                tokenizer: str | None = None, max_new_tokens: int = 1024, bert_model: str | None = None,
                human_scores: str | None = None, out_dir: str = "data/reports/casegen",
                allow_same_family: bool = False, skip_judge: bool = False, plots: bool = True) -> EvalParams:
    """Evaluation parameters from plain options. The evaluated models default to the settings' `system`
    role, the judge to its `judge` role ($CASEFORGE_CASEGEN_JUDGE also names one); with neither (and
    without skip_judge) this is a ValueError, and a judge of a judged model's family is refused
    (caseforge.families.SameFamily) unless allowed."""
    models = list(models or [Backends(llm, {}).model("system", GENERATE_STEP)])
    judge = None
    if not skip_judge:
        judge = judge_model or os.environ.get("CASEFORGE_CASEGEN_JUDGE")
        if not judge:
            try:
                judge = Backends(judge_llm or llm, {}).model("judge", JUDGE_STEP)
            except ValueError as exc:
                raise ValueError(f"casegen eval needs a judge: --judge-model M, [llm.roles.judge] in the settings, "
                                 f"or --skip-judge ({exc})") from exc
        check_judge_family(models, judge, allow_same_family)
    return EvalParams(models=models, llm=llm, judge_model=judge, judge_llm=judge_llm, replay_file=replay_file,
                      judge_replay_file=judge_replay_file, task=task, limit=limit,
                      config=evaluate.EvalConfig(max_input_chars=max_input_chars, max_new_tokens=max_new_tokens,
                                                 max_input_tokens=max_input_tokens, tokenizer_path=tokenizer),
                      bert_model=bert_model, human_scores=human_scores, out_dir=out_dir,
                      allow_same_family=allow_same_family, plots=plots)


def generate_step(session: RunSession, backend, items: list[dict], config: evaluate.EvalConfig) -> None:
    evaluate.run_generation(session.con, session.run_id, backend, items, config, session.report)


def judge_step(session: RunSession, judge_backend, generations: list[dict], config: evaluate.EvalConfig) -> None:
    evaluate.run_judging(session.con, session.run_id, judge_backend, generations, config, session.report)


def metrics_step(session: RunSession, generations: list[dict], bert_model_path: str | None) -> None:
    scorer, reason = None, "no BERTScore model configured (--bert-model PATH to a local folder)"
    if bert_model_path:
        scorer = metrics.BertScorer(bert_model_path)   # a missing folder is a clear error, never a download
    evaluate.run_metrics(session.con, session.run_id, generations, scorer, reason, session.report)


def report_step(session: RunSession, params: EvalParams, notes: list[str]) -> dict:
    out_dir = Path(params.out_dir)
    wide = reporting.leaderboard_wide(reporting.leaderboard_long(session.con, params.models))
    agreement = None
    if params.human_scores:
        human = evaluate.read_human_scores(Path(params.human_scores))
        agreement = evaluate.agreement_table(session.con, human, params.judge_model or "")
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "casegen_agreement.json").write_text(json.dumps(agreement, indent=2), encoding="utf-8")
        for scorer, by_task in agreement.items():
            avg = by_task["average"]
            notes.append(f"agreement with people, {scorer}: Kendall {avg['kendall']:.3f}, Pearson "
                         f"{avg['pearson']:.3f}, Spearman {avg['spearman']:.3f} (n={avg['n']})")
    markdown = reporting.markdown_tables(wide, notes)
    paths = reporting.export(wide, markdown, out_dir)
    if params.plots:
        paths += reporting.plot_score_distributions(session.con, params.models, out_dir)
    session.report.add("report_files", len(paths))
    return {"markdown": markdown, "files": [str(p) for p in paths], "agreement": agreement}


@dataclass(frozen=True)
class EvalSteps:
    generate: Callable = generate_step
    judge: Callable = judge_step
    score: Callable = metrics_step
    report: Callable = report_step


def run_eval(settings: Settings, params: EvalParams, steps: EvalSteps | None = None) -> tuple[StageReport, dict]:
    """Generate with every model, judge (unless no judge model), score, and write the leaderboard."""
    steps = steps or EvalSteps()
    warnings = check_judge_family(params.models, params.judge_model, params.allow_same_family) \
        if params.judge_model else []
    for warning in warnings:
        log.warning("casegen: %s", warning)
    result: dict = {}
    with run_session(settings, "eval", "casegen") as session:
        items = evaluate.load_items(session.con, params.task, params.limit)
        session.report.add("items", len(items))
        if not items:
            session.report.fail("no CaseGen items in the warehouse: run `caseforge casegen build` first")
            return session.report, result
        for model in params.models:
            backend = Backends(params.llm, {"system": model}, replay_file=params.replay_file,
                               **params.backend_options).for_step(GENERATE_STEP, "system")
            steps.generate(session, backend, items, params.config)
        wanted = {i["item_id"] for i in items}
        generations = [g for g in evaluate.generations_to_score(session.con, params.models) if g["item_id"] in wanted]
        if params.judge_model:
            judge_backend = Backends(params.judge_llm or params.llm, {"judge": params.judge_model},
                                     replay_file=params.judge_replay_file or params.replay_file,
                                     **params.backend_options).for_step(JUDGE_STEP, "judge")
            steps.judge(session, judge_backend, generations, params.config)
        steps.score(session, generations, params.bert_model)
        notes = [metrics.COMPAT_LABEL + ": shown only to compare with published numbers",
                 f"judge: {params.judge_model or 'none'}; generation at temperature 0; inputs cut from the middle "
                 f"beyond {params.config.max_input_chars} characters", *warnings]
        if not params.bert_model:
            notes.append("BERTScore skipped: no local model configured")
        result = steps.report(session, params, notes)
    return session.report, result
