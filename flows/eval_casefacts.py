"""Prefect flow: evaluate a system on CaseFacts claims; results in eval.* and exported files."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from caseforge.orchestration import quiet_prefect_defaults

quiet_prefect_defaults()

from prefect import flow, get_run_logger, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from caseforge.config import PROJECT_ROOT  # noqa: E402
from caseforge.config import settings as load_settings  # noqa: E402
from caseforge.orchestration import RunSession, final_state, publish_counts, run_session  # noqa: E402
from caseforge.retrieval import build_retriever  # noqa: E402
from caseforge.retrieval.corpora import scotus_case_names, scotus_corpus  # noqa: E402
from caseforge.tasks.evaluation import casefacts_eval, store  # noqa: E402
from caseforge.tasks.evaluation.casefacts_data import file_sha, load_claims  # noqa: E402
from caseforge.tasks.evaluation.casenames import DEFAULT_FUZZY_THRESHOLD, CaseNameIndex  # noqa: E402
from caseforge.tasks.evaluation.results import publish_metrics  # noqa: E402

LLM_SYSTEMS = ("closed-book", "retrieve-verify", "case")
SYSTEMS = casefacts_eval.RETRIEVAL_SYSTEMS + LLM_SYSTEMS
DEFAULT_OUT_DIR = PROJECT_ROOT / "data" / "eval" / "casefacts"


def run_parameters(system: str, k: int, missing_gold: str, limit: int | None, mu: float, rrf_k: int,
                   fuzzy_threshold: float, llm: str | None, model: str | None, retriever: str | None,
                   max_rounds: int, seed: int) -> dict:
    params = {"k": k, "missing_gold": missing_gold, "limit": limit, "fuzzy_threshold": fuzzy_threshold}
    if system in ("qlm",) or retriever == "qlm":
        params["mu"] = mu
    if system == "hybrid" or retriever == "hybrid":
        params["rrf_k"] = rrf_k
    if system in LLM_SYSTEMS:
        params.update({"llm": llm, "model": model})
        if system != "closed-book":
            params["retriever"] = retriever
        if system == "case":
            params.update({"max_rounds": max_rounds, "seed": seed})
    return params


@task(name="casefacts-prepare", cache_policy=NO_CACHE)
def prepare_task(session: RunSession, claims_path: str, limit: int | None, missing_gold: str,
                 fuzzy_threshold: float):
    claims, problems = load_claims(Path(claims_path))
    if limit:
        claims = claims[:limit]
    for item_id, reason in problems:
        session.report.fail(f"{item_id}: {reason}")
    corpus = scotus_corpus(session.con)
    names = CaseNameIndex(scotus_case_names(session.con), threshold=fuzzy_threshold)
    prepared = casefacts_eval.prepare(claims, names, set(corpus.ids), missing_gold)
    session.report.add("claims", len(claims))
    session.report.add("claims_invalid", len(problems))
    session.report.add("skipped_gold_missing", sum(1 for p in prepared if p.skip_reason))
    invalid = [store.ItemResult(item_id, None, {}, {}, {}, "failed", reason) for item_id, reason in problems]
    return corpus, names, prepared, invalid


@task(name="casefacts-retrieval", cache_policy=NO_CACHE)
def retrieval_task(prepared, retriever, k: int):
    return casefacts_eval.evaluate_retrieval(prepared, retriever, k)


@flow(name="eval-casefacts", log_prints=True)
def eval_casefacts(claims: str, system: str, db: str | None = None, k: int = 10, missing_gold: str = "skip",
                   limit: int | None = None, index_dir: str | None = None, mu: float = 2000.0, rrf_k: int = 60,
                   dense_model: str | None = None, fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
                   llm: str | None = None, model: str | None = None, replay_file: str | None = None,
                   retriever: str = "bm25", max_rounds: int = 2, seed: int = 0, out_dir: str | None = None):
    """Score `system` on the claims file: retrieval recall, Evidence/Verdict metrics, per class."""
    logger = get_run_logger()
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r} (choose from {', '.join(SYSTEMS)})")
    settings = load_settings(db)
    params = run_parameters(system, k, missing_gold, limit, mu, rrf_k, fuzzy_threshold, llm, model,
                            retriever, max_rounds, seed)
    sha = file_sha(Path(claims))
    run_id = store.eval_run_id("casefacts", system, sha, params)
    started = datetime.now(timezone.utc)
    with run_session(settings, "eval", f"casefacts:{system}") as session:
        corpus, names, prepared, invalid = prepare_task(session, claims, limit, missing_gold, fuzzy_threshold)

        def retriever_for(kind: str):
            return build_retriever(kind, corpus, index_dir, mu=mu, rrf_k=rrf_k, dense_model=dense_model)

        if system in casefacts_eval.RETRIEVAL_SYSTEMS:
            items = retrieval_task(prepared, retriever_for(system), k)
        else:
            from caseforge.tasks.evaluation import casefacts_llm

            items = casefacts_llm.run_llm_system(session, system, prepared, corpus, names, retriever_for,
                                                 llm=llm, model=model, replay_file=replay_file,
                                                 retriever=retriever, k=k, max_rounds=max_rounds, seed=seed)
        items = invalid + items
        metrics = casefacts_eval.summarise(items)
        session.report.add("scored", int(metrics["n"]))
        session.report.add("failed_items", int(metrics["n_failed"]))
        for item in items:
            if item.status == "failed" and item not in invalid:
                session.report.fail(f"{item.item_id}: {item.reason}")
        store.save_run(session.con, run_id, "casefacts", system, Path(claims).name, sha, params, items, metrics,
                       started)
        header = {"task": "casefacts", "system": system, "dataset": Path(claims).name, "params": params}
        paths = store.export_run(Path(out_dir) if out_dir else DEFAULT_OUT_DIR, run_id, header, items, metrics)
        logger.info("casefacts %s: n=%d exported %s", system, metrics["n"], ", ".join(map(str, paths)))
        publish_metrics(f"casefacts-{system}", f"CaseFacts {system}", metrics)
        publish_counts(session.report, "eval-casefacts", f"CaseFacts eval {system}")
        report = session.report
    return final_state(report)
