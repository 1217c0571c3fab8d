"""Prefect flows: evaluate an attributed-QA system on AQuAECHR items, and the quality judge's agreement
with expert scores; results in the evaluation store (eval.*), a report and a CSV."""
from __future__ import annotations

from prefect import flow

from caseforge.artifacts import publish_report
from caseforge.flows.states import as_tasks, ends_as_stopped, final_state
from caseforge.outputs import check_output_folders
from caseforge.settings import load_settings
from caseforge.tasks.aquaechr.eval import run

PREFECT_STEPS = as_tasks(run.Steps(), "aquaechr-eval")
PREFECT_JUDGE_STEPS = as_tasks(run.JudgeSteps(), "aquaechr-judge-agreement")


@flow(name="aquaechr-eval", log_prints=True)
@ends_as_stopped
def aquaechr_eval(system: str, llm: str | None = None, model: str | None = None, db: str | None = None, replay_file: str | None = None,
                  items_file: str | None = None, names_file: str | None = None, nli: str = "llm",
                  nli_model: str | None = None, k: int = 5, retriever: str = "bm25", max_rounds: int = 2,
                  limit: int | None = None, bertscore_model: str | None = None, no_bertscore: bool = False,
                  index_dir: str | None = None, dense_model: str | None = None, out_dir: str | None = None):
    """Run `system` with `model` on the items and score it; the final state's data carries the evaluation
    run id (results.eval_run_id)."""
    settings = load_settings(db)
    check_output_folders(settings, "the evaluation's files", out_dir=out_dir, index_dir=index_dir)
    options = run.Options(system, llm, model, replay_file, items_file, names_file, nli, nli_model, k, retriever,
                          max_rounds, limit, bertscore_model, no_bertscore, index_dir, dense_model, out_dir)
    report = run.evaluate(settings, options, steps=PREFECT_STEPS)
    publish_report(report, "aquaechr-eval", f"AQuAECHR eval {system}")
    return final_state(report)


@flow(name="aquaechr-judge-agreement", log_prints=True)
@ends_as_stopped
def aquaechr_judge_agreement(gold: str, model: str | None = None, llm: str | None = None, db: str | None = None,
                             replay_file: str | None = None, low_quality_at: int = 3, convention: str = "paper"):
    """F1 and confusion matrix of the quality judge `model` against expert scores in the `gold` CSV, under
    `convention` (paper: high quality positive; caseforge: low quality positive), with an always-high baseline."""
    report = run.evaluate_judge(load_settings(db), gold, llm, model, replay_file, low_quality_at,
                                steps=PREFECT_JUDGE_STEPS, convention=convention)
    publish_report(report, "aquaechr-judge-agreement", "AQuAECHR judge agreement")
    return final_state(report)
