"""Prefect flow: evaluate a system on CaseFacts claims; results in the evaluation store (eval.*) and files."""
from __future__ import annotations

from prefect import flow

from caseforge.artifacts import publish_report
from caseforge.flows.states import as_tasks, ends_as_stopped, final_state
from caseforge.outputs import check_output_folders
from caseforge.settings import load_settings
from caseforge.tasks.casefacts.eval import run
from caseforge.tasks.casefacts.eval.casenames import DEFAULT_FUZZY_THRESHOLD

PREFECT_STEPS = as_tasks(run.Steps(), "casefacts-eval")


@flow(name="casefacts-eval", log_prints=True)
@ends_as_stopped
def casefacts_eval(claims: str, system: str, db: str | None = None, k: int = 10, missing_gold: str | None = None,
                   limit: int | None = None, index_dir: str | None = None, mu: float = 2000.0, rrf_k: int = 60,
                   dense_model: str | None = None, fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
                   llm: str | None = None, model: str | None = None, replay_file: str | None = None,
                   retriever: str = "bm25", max_rounds: int = 2, seed: int = 0, out_dir: str | None = None,
                   gold_rule: str = "paper", stemmer: str | None = run.DEFAULT_STEMMER, fusion: str = "score",
                   fusion_weights: list[float] | None = None, tune_on: str | None = None):
    """Score `system` on the claims file: retrieval recall, Evidence/Verdict metrics, per class; the final
    state's data carries the evaluation run id (results.eval_run_id)."""
    settings = load_settings(db)
    check_output_folders(settings, "the evaluation's files", out_dir=out_dir, index_dir=index_dir)
    options = run.Options(claims, system, k, missing_gold, limit, index_dir, mu, rrf_k, dense_model, fuzzy_threshold,
                          llm, model, replay_file, retriever, max_rounds, seed, out_dir, gold_rule=gold_rule,
                          stemmer=None if stemmer in (None, "none") else stemmer, fusion=fusion,
                          fusion_weights=tuple(fusion_weights) if fusion_weights else None, tune_on=tune_on)
    report = run.evaluate(settings, options, steps=PREFECT_STEPS)
    publish_report(report, "casefacts-eval", f"CaseFacts eval {system}")
    return final_state(report)
