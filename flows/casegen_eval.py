"""Prefect flow: run models on CaseGen items, judge the drafts, score them, store one evaluation run per model
(eval.runs, eval.item_outputs, eval.metrics), publish a leaderboard."""
from __future__ import annotations

from prefect import flow

from caseforge.artifacts import publish_markdown, publish_report
from caseforge.flows.states import as_tasks, ends_as_stopped, final_state
from caseforge.outputs import check_output_folders
from caseforge.settings import load_settings
from caseforge.tasks.casegen.eval import pipeline

PREFECT_STEPS = as_tasks(pipeline.EvalSteps(), "casegen")


@flow(name="casegen-eval", log_prints=True)
@ends_as_stopped
def casegen_eval(models: list[str] | None = None, llm: str | None = None, db: str | None = None,
                 judge_model: str | None = None,
                 judge_llm: str | None = None, replay_file: str | None = None, judge_replay_file: str | None = None,
                 task: str | None = None, limit: int | None = None, max_input_chars: int = 8000,
                 max_input_tokens: int | None = None, tokenizer: str | None = None, max_new_tokens: int = 1024,
                 bert_model: str | None = None, human_scores: str | None = None,
                 out_dir: str | None = None, allow_same_family: bool = False, skip_judge: bool = False,
                 plots: bool = True):
    """Generate (temperature 0, input cut from the middle), judge, score and report CaseGen items; the final
    state's data carries the evaluation run of each model (results.eval_run_ids: model → run id)."""
    settings = load_settings(db)
    check_output_folders(settings, "the evaluation's files", out_dir=out_dir)
    params = pipeline.make_params(models, llm, judge_model, judge_llm, replay_file, judge_replay_file, task, limit,
                                  max_input_chars, max_input_tokens, tokenizer, max_new_tokens, bert_model,
                                  human_scores, out_dir, allow_same_family, skip_judge, plots)
    report, result = pipeline.run_eval(settings, params, steps=PREFECT_STEPS)
    if result.get("markdown"):
        publish_markdown("casegen-leaderboard", "## CaseGen leaderboard\n\n" + result["markdown"],
                         f"CaseGen evaluation run {report.run_id}: the scores of each model judged")
    publish_report(report, "casegen-eval", "CaseGen evaluation")
    return final_state(report)
