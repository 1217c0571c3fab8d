"""CaseGen evaluation as plain steps: generate drafts, judge them, score them, store one evaluation run per
model (caseforge.evalstore), report from the store; the Prefect flow passes task-wrapped versions of the steps."""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from caseforge.llm.config import Backends
from caseforge.outputs import write_text_atomically
from caseforge.session import RunSession, run_session
from caseforge.settings import Settings, load_settings
from caseforge.stage_report import StageReport
from caseforge.tasks.casegen.eval import evaluate, metrics, store
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
    out_dir: str | None = None              # None: <db name>-reports/casegen beside the warehouse
    allow_same_family: bool = False
    plots: bool = True
    backend_options: dict = field(default_factory=dict)


def make_params(models: list[str] | None = None, llm: str | None = None, judge_model: str | None = None,
                judge_llm: str | None = None,
                replay_file: str | None = None, judge_replay_file: str | None = None, task: str | None = None,
                limit: int | None = None, max_input_chars: int = 8000, max_input_tokens: int | None = None,
                tokenizer: str | None = None, max_new_tokens: int = 1024, bert_model: str | None = None,
                human_scores: str | None = None, out_dir: str | None = None,
                allow_same_family: bool = False, skip_judge: bool = False, plots: bool = True) -> EvalParams:
    """Evaluation parameters from plain options. The evaluated models default to the settings' `system`
    role, the judge to its `judge` role ($CASEFORGE_CASEGEN_JUDGE also names one); with neither (and
    without skip_judge) this is a ValueError, and a judge of a judged model's family is refused
    (caseforge.families.SameFamily) unless allowed."""
    models = list(models or [Backends(llm, {}).model("system", GENERATE_STEP)])
    judge = None
    if not skip_judge:
        judge = judge_model or load_settings().casegen_judge
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


def run_params(params: EvalParams) -> dict:
    """Every setting that changes a model's results, so part of its run id (caseforge.evalstore.eval_run_id):
    the backend, the judge and its backend, the input budget (characters, or tokens of a local tokenizer),
    the output budgets, the task filter and limit, and the BERTScore model. Two configurations never share a
    run; re-running one replaces its rows."""
    config = params.config
    tokens = config.max_input_tokens is not None
    return {"llm": params.llm, "judge_model": params.judge_model,
            "judge_llm": (params.judge_llm or params.llm) if params.judge_model else None,
            "max_input_chars": None if tokens else config.max_input_chars,
            "max_input_tokens": config.max_input_tokens, "tokenizer": config.tokenizer_path if tokens else None,
            "max_new_tokens": config.max_new_tokens,
            "judge_max_input_chars": config.judge_max_input_chars if params.judge_model else None,
            "judge_max_new_tokens": config.judge_max_new_tokens if params.judge_model else None,
            "task": params.task, "limit": params.limit, "bert_model": params.bert_model}


def generate_step(session: RunSession, backend, items: list[dict],
                  config: evaluate.EvalConfig) -> list[evaluate.Generation]:
    return evaluate.run_generation(session.con, backend, items, config, session.report)


def judge_step(session: RunSession, judge_backend, generations: list[evaluate.Generation], items: list[dict],
               config: evaluate.EvalConfig) -> dict[str, evaluate.Judgement]:
    return evaluate.run_judging(session.con, judge_backend, generations, items, config, session.report)


def metrics_step(session: RunSession, generations: list[evaluate.Generation], items: list[dict],
                 bert_model_path: str | None) -> tuple[dict[str, dict], str]:
    """(reference scores by draft, the BERTScore note: the model used or why it was skipped)."""
    scorer = None
    if bert_model_path:
        scorer = metrics.BertScorer(bert_model_path)   # a missing folder is a clear error, never a download
    scores = evaluate.run_metrics(generations, items, scorer, session.report)
    note = (f"model {scorer.name} (greedy token matching, no idf, no rescaling)" if scorer is not None
            else "skipped: no BERTScore model configured (--bert-model PATH to a local folder)")
    return scores, note


def store_step(session: RunSession, params: EvalParams, items: list[dict], generations: list[evaluate.Generation],
               judgements: dict[str, evaluate.Judgement], scores: dict[str, dict], bert_note: str,
               started: datetime) -> dict[str, str]:
    """One evaluation run per model in the store (eval.runs, eval.item_outputs, eval.metrics); model → run id."""
    run_ids = {}
    for model in dict.fromkeys(params.models):
        mine = [g for g in generations if g.model == model]
        results = store.item_results(items, mine, judgements, scores, session.run_id)
        run_ids[model] = store.save_model_run(session.con, model, mine[0].backend if mine else params.llm,
                                              run_params(params), items, results, params.judge_model, bert_note,
                                              started)
        session.report.add("item_outputs_stored", len(results))
        failed = sum(r.status == "failed" for r in results)
        if failed * 2 > len(results):
            # the verdict first, so that the summary's one-line note of the stage says it
            session.report.failures.insert(0, f"evaluation of {model}: {failed} of {len(results)} items failed "
                                              f"({store.failure_summary(results)}); its means are over the "
                                              f"{len(results) - failed} that did not, not a result")
    return run_ids


def report_step(session: RunSession, params: EvalParams, run_ids: dict[str, str], notes: list[str]) -> dict:
    """Leaderboard files, plots and agreement with people, all read from the store's runs `run_ids`."""
    out_dir = Path(params.out_dir) if params.out_dir else session.settings.reports_dir / "casegen"
    ids = list(run_ids.values())
    wide = reporting.leaderboard_wide(reporting.leaderboard_long(session.con, ids))
    agreement = None
    if params.human_scores:
        human = evaluate.read_human_scores(Path(params.human_scores))
        agreement = evaluate.agreement_table(session.con, human, ids)
        out_dir.mkdir(parents=True, exist_ok=True)
        write_text_atomically(out_dir / "casegen_agreement.json", json.dumps(agreement, indent=2))
        for scorer, by_task in agreement.items():
            avg = by_task["average"]
            notes.append(f"agreement with people, {scorer}: Kendall {avg['kendall']:.3f}, Pearson "
                         f"{avg['pearson']:.3f}, Spearman {avg['spearman']:.3f} (n={avg['n']})")
    notes = [*notes, *(f"evaluation run of {model}: {run_id}" for model, run_id in run_ids.items())]
    markdown = reporting.markdown_tables(wide, notes)
    paths = reporting.export(wide, markdown, out_dir)
    if params.plots:
        paths += reporting.plot_score_distributions(session.con, ids, out_dir)
    session.report.add("report_files", len(paths))
    return {"markdown": markdown, "files": [str(p) for p in paths], "agreement": agreement}


@dataclass(frozen=True)
class EvalSteps:
    generate: Callable = generate_step
    judge: Callable = judge_step
    score: Callable = metrics_step
    store: Callable = store_step
    report: Callable = report_step


def run_eval(settings: Settings, params: EvalParams, steps: EvalSteps | None = None) -> tuple[StageReport, dict]:
    """Generate with every model, judge (unless no judge model), score, store one evaluation run per model,
    and write the leaderboard. The report's results carry the run ids (results["eval_run_ids"]: model → id)."""
    steps = steps or EvalSteps()
    warnings = check_judge_family(params.models, params.judge_model, params.allow_same_family) \
        if params.judge_model else []
    for warning in warnings:
        log.warning("casegen: %s", warning)
    result: dict = {}
    started = datetime.now(timezone.utc)
    with run_session(settings, "eval", "casegen") as session:
        items = evaluate.load_items(session.con, params.task, params.limit)
        session.report.add("items", len(items))
        if not items:
            session.report.fail("no CaseGen items in the warehouse: run `caseforge casegen build` first")
            return session.report, result
        generations: list[evaluate.Generation] = []
        for model in dict.fromkeys(params.models):
            backend = Backends(params.llm, {"system": model}, replay_file=params.replay_file,
                               **params.backend_options).for_step(GENERATE_STEP, "system")
            generations += steps.generate(session, backend, items, params.config)
        judgements: dict[str, evaluate.Judgement] = {}
        if params.judge_model:
            judge_backend = Backends(params.judge_llm or params.llm, {"judge": params.judge_model},
                                     replay_file=params.judge_replay_file or params.replay_file,
                                     **params.backend_options).for_step(JUDGE_STEP, "judge")
            judgements = steps.judge(session, judge_backend, generations, items, params.config)
        scores, bert_note = steps.score(session, generations, items, params.bert_model)
        run_ids = steps.store(session, params, items, generations, judgements, scores, bert_note, started)
        session.report.results["eval_run_ids"] = run_ids
        budget = (f"{params.config.max_input_tokens} tokens" if params.config.max_input_tokens is not None
                  else f"{params.config.max_input_chars} characters")
        notes = [metrics.COMPAT_LABEL + ": shown only to compare with published numbers",
                 f"judge: {params.judge_model or 'none'}; generation at temperature 0; inputs cut from the middle "
                 f"beyond {budget}", *warnings]
        if not params.bert_model:
            notes.append("BERTScore skipped: no local model configured")
        result = {**steps.report(session, params, run_ids, notes), "eval_run_ids": run_ids}
    return session.report, result
