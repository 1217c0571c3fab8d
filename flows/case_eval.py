"""Prefect flow: CASE or one of its baselines on Bar Exam QA; results in the evaluation store (eval.*)."""
from __future__ import annotations

from prefect import flow

from caseforge.artifacts import publish_report
from caseforge.flows.states import as_tasks, ends_as_stopped, final_state
from caseforge.outputs import check_output_folders
from caseforge.settings import load_settings
from caseforge.tasks.case.eval import run

PREFECT_STEPS = as_tasks(run.Steps(), "case-eval")


@flow(name="case-eval", log_prints=True)
@ends_as_stopped
def case_eval(system: str, llm: str | None = None, model: str | None = None, db: str | None = None, k: int = 5, limit: int | None = None,
              replay_file: str | None = None, retriever: str = "bm25", max_rounds: int = 2, seed: int = 0,
              index_dir: str | None = None, mu: float = 2000.0, rrf_k: int = 60, dense_model: str | None = None,
              out_dir: str | None = None):
    """Answer the Bar Exam questions with `system` (CASE: advocates + seeded 3-of-5 persona jury) and score
    accuracy; the final state's data carries the evaluation run id (results.eval_run_id)."""
    settings = load_settings(db)
    check_output_folders(settings, "the evaluation's files", out_dir=out_dir, index_dir=index_dir)
    options = run.Options(system, llm, model, k, limit, replay_file, retriever, max_rounds, seed, index_dir, mu,
                          rrf_k, dense_model, out_dir)
    report = run.evaluate(settings, options, steps=PREFECT_STEPS)
    publish_report(report, "case-eval", f"Bar Exam eval {system}")
    return final_state(report)
