"""Prefect flows: import Bar Exam QA, and run CASE or a baseline on it (results in eval.*)."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from caseforge.orchestration import quiet_prefect_defaults

quiet_prefect_defaults()

from prefect import flow, get_run_logger, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from caseforge.config import PROJECT_ROOT  # noqa: E402
from caseforge.config import settings as load_settings  # noqa: E402
from caseforge.llm import get_backend  # noqa: E402
from caseforge.orchestration import RunSession, final_state, publish_counts, run_session  # noqa: E402
from caseforge.retrieval import build_retriever  # noqa: E402
from caseforge.retrieval.corpora import barexam_corpus  # noqa: E402
from caseforge.tasks.barexam import ingest as barexam_ingest  # noqa: E402
from caseforge.tasks.evaluation import barexam_eval, store  # noqa: E402
from caseforge.tasks.evaluation.results import publish_metrics  # noqa: E402
from caseforge.warehouse import run_sql  # noqa: E402

DEFAULT_OUT_DIR = PROJECT_ROOT / "data" / "eval" / "barexam"


@task(name="barexam-import", cache_policy=NO_CACHE)
def import_task(session: RunSession, folder: str) -> None:
    barexam_ingest.import_folder(session.con, session.archive, session.run_id, Path(folder), session.report)


@flow(name="barexam-import", log_prints=True)
def barexam_import(from_dir: str, db: str | None = None):
    """Archive, parse, gate and curate barexam_qa.csv and passages_*.jsonl from a folder."""
    with run_session(load_settings(db), "ingest", "barexam") as session:
        import_task(session, from_dir)
        publish_counts(session.report, "ingest-barexam", "Bar Exam import")
        report = session.report
    return final_state(report)


def case_parameters(system: str, k: int, limit: int | None, llm: str, model: str, retriever: str,
                    max_rounds: int, seed: int, mu: float, rrf_k: int) -> dict:
    params = {"k": k, "limit": limit, "llm": llm, "model": model}
    used = barexam_eval.BASELINES.get(system) or (retriever if system == "case" else None)
    if system in ("llm-only", "oracle"):
        params.pop("k")
    if used:
        params["retriever"] = used
        if used == "qlm":
            params["mu"] = mu
        if used == "hybrid":
            params["rrf_k"] = rrf_k
    if system == "case":
        params.update({"max_rounds": max_rounds, "seed": seed})
    return params


@task(name="barexam-answer", cache_policy=NO_CACHE)
def answer_task(session: RunSession, system: str, backend, problems, gold_passages, k, retriever_name,
                max_rounds, seed, index_dir, mu, rrf_k, dense_model):
    corpus = barexam_corpus(session.con)
    retriever = None
    kind = barexam_eval.BASELINES.get(system) or (retriever_name if system == "case" else None)
    if kind:
        retriever = build_retriever(kind, corpus, index_dir, mu=mu, rrf_k=rrf_k, dense_model=dense_model)
    if system == "case":
        return barexam_eval.run_case(session.con, backend, problems, retriever, k, max_rounds, seed, session.report)
    return barexam_eval.run_baseline(session.con, backend, problems, system, k, session.report, retriever=retriever,
                                     passage_text=dict(zip(corpus.ids, corpus.texts)), gold_passages=gold_passages)


@flow(name="eval-barexam", log_prints=True)
def barexam_eval_flow(system: str, run_id: str, params: dict, db: str | None = None, k: int = 5,
                      limit: int | None = None, llm: str = "replay", model: str = "", replay_file: str | None = None,
                      retriever: str = "bm25", max_rounds: int = 2, seed: int = 0, index_dir: str | None = None,
                      mu: float = 2000.0, rrf_k: int = 60, dense_model: str | None = None, out_dir: str | None = None):
    logger = get_run_logger()
    started = datetime.now(timezone.utc)
    with run_session(load_settings(db), "eval", f"barexam:{system}") as session:
        rows = run_sql(session.con, "barexam/questions.sql").fetchall()
        if not rows:
            raise RuntimeError("no Bar Exam questions in curated.barexam_questions: run `caseforge ingest barexam` first")
        rows = rows[:limit] if limit else rows
        problems, gold_passages = barexam_eval.problems_from_rows(rows)
        backend = get_backend(llm, model, **({"replay_file": replay_file} if replay_file else {}))
        items = answer_task(session, system, backend, problems, gold_passages, k, retriever, max_rounds, seed,
                            index_dir, mu, rrf_k, dense_model)
        metrics = barexam_eval.summarise(items)
        for item in items:
            if item.status == "failed":
                session.report.fail(f"{item.item_id}: {item.reason}")
        session.report.add("scored", len(items))
        dataset_sha = store.eval_run_id("barexam", "data", "", {"ids": [r[0] for r in rows]})
        store.save_run(session.con, run_id, "barexam", system, "curated.barexam_questions", dataset_sha, params,
                       items, metrics, started)
        header = {"task": "barexam", "system": system, "params": params,
                  "label": "oracle (gold passage given, not flagged as gold)" if system == "oracle" else system}
        paths = store.export_run(Path(out_dir) if out_dir else DEFAULT_OUT_DIR, run_id, header, items, metrics)
        logger.info("barexam %s: accuracy %.3f on %d; exported %s", system, metrics["accuracy"], len(items),
                    ", ".join(map(str, paths)))
        publish_metrics(f"barexam-{system}", f"Bar Exam {system}", metrics)
        publish_counts(session.report, "eval-barexam", f"Bar Exam eval {system}")
        report = session.report
    return final_state(report)


def case_eval(system: str, db: str | None = None, k: int = 5, limit: int | None = None, llm: str = "replay",
              model: str = "", replay_file: str | None = None, retriever: str = "bm25", max_rounds: int = 2,
              seed: int = 0, index_dir: str | None = None, mu: float = 2000.0, rrf_k: int = 60,
              dense_model: str | None = None, out_dir: str | None = None):
    """Run the flow; return (final state, eval_run_id) so the caller can read the metrics."""
    if system not in barexam_eval.SYSTEMS:
        raise ValueError(f"unknown system {system!r} (choose from {', '.join(barexam_eval.SYSTEMS)})")
    params = case_parameters(system, k, limit, llm, model, retriever, max_rounds, seed, mu, rrf_k)
    run_id = store.eval_run_id("barexam", system, "curated.barexam_questions", params)
    state = barexam_eval_flow(system=system, run_id=run_id, params=params, db=db, k=k, limit=limit, llm=llm,
                              model=model, replay_file=replay_file, retriever=retriever, max_rounds=max_rounds,
                              seed=seed, index_dir=index_dir, mu=mu, rrf_k=rrf_k, dense_model=dense_model,
                              out_dir=out_dir, return_state=True)
    return state, run_id
