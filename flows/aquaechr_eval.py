"""Prefect flow: evaluate one attributed-QA system on AQuAECHR items; rows in eval.aquaechr_*, report + CSV."""
from __future__ import annotations

from pathlib import Path

from caseforge.orchestration import quiet_prefect_defaults

quiet_prefect_defaults()

from prefect import flow, get_run_logger, task  # noqa: E402
from prefect.artifacts import create_markdown_artifact  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from caseforge.config import PROJECT_ROOT  # noqa: E402
from caseforge.config import settings as load_settings  # noqa: E402
from caseforge.orchestration import RunSession, final_state, publish_counts, run_session  # noqa: E402

DEFAULT_OUT_DIR = PROJECT_ROOT / "data" / "eval" / "aquaechr"


@task(name="aquaechr-load-items", cache_policy=NO_CACHE)
def load_items_task(session: RunSession, items_file: str | None, names_file: str | None):
    from caseforge.tasks.aqeval.items import build_passages, db_paragraphs, load_annotation_file, load_db_items

    if items_file:
        names = Path(names_file) if names_file else Path(items_file).with_name("caseid_to_name.json")
        items, problems = load_annotation_file(Path(items_file), names)
        dataset = Path(items_file).name
    else:
        items, problems = load_db_items(session.con)
        dataset = "curated.aquaechr_qa"
    passages = build_passages(items, db_paragraphs(session.con))
    session.report.add("items", len(items))
    session.report.add("items_rejected", len(problems))
    session.report.add("passages", len(passages.passages))
    return items, problems, passages, dataset


@task(name="aquaechr-evaluate", cache_policy=NO_CACHE)
def evaluate_task(session: RunSession, config, items, passages, backend, nli, embed, problems):
    from caseforge.tasks.aqeval.pipeline import evaluate

    return evaluate(session.con, config, items, passages, backend, nli, embed, problems)


@flow(name="eval-aquaechr", log_prints=True)
def eval_aquaechr(system: str, llm: str, model: str, db: str | None = None, replay_file: str | None = None,
                  items_file: str | None = None, names_file: str | None = None, nli: str = "llm",
                  nli_model: str | None = None, k: int = 5, retriever: str = "bm25", max_rounds: int = 2,
                  limit: int | None = None, bertscore_model: str | None = None, no_bertscore: bool = False,
                  index_dir: str | None = None, dense_model: str | None = None, out_dir: str | None = None):
    """Run `system` with `model` on the items, score it, store eval.aquaechr_* and write the report."""
    from caseforge.llm import get_backend
    from caseforge.tasks.aqeval import store
    from caseforge.tasks.aqeval.metrics import TokenEmbedder
    from caseforge.tasks.aqeval.nli import make_nli, model_family
    from caseforge.tasks.aqeval.pipeline import RunConfig, default_bertscore_model

    logger = get_run_logger()
    settings = load_settings(db)
    backend = get_backend(llm, model, replay_file=replay_file) if llm == "replay" else get_backend(llm, model)
    embed, bert_label, bert_reason = None, None, "disabled by --no-bertscore"
    if not no_bertscore:
        path, bert_reason = (bertscore_model, None) if bertscore_model else default_bertscore_model()
        if path:
            embed = TokenEmbedder(path)
            bert_label = embed.label
    with run_session(settings, "eval", f"aquaechr:{system}") as session:
        items, problems, passages, dataset = load_items_task(session, items_file, names_file)
        judge_backend = backend
        if nli == "llm" and nli_model and nli_model != model:
            judge_backend = get_backend(llm, nli_model, replay_file=replay_file) if llm == "replay" \
                else get_backend(llm, nli_model)
        judge = make_nli(nli, session.con, judge_backend)
        if nli == "llm" and model_family(judge_backend.model) and \
                model_family(judge_backend.model) == model_family(model):
            logger.warning("the NLI judge %s is of the generator's family (%s); pass --nli-model of another "
                           "family or --nli cross-encoder:<path>", judge_backend.model, model_family(model))
        config = RunConfig(system=system, llm=llm, model=model, nli=judge.name, dataset=dataset, k=k,
                           retriever=retriever, max_rounds=max_rounds, limit=limit, bertscore_model=bert_label,
                           bertscore_skip_reason=bert_reason, index_dir=index_dir, dense_model=dense_model)
        result = evaluate_task(session, config, items, passages, backend, judge, embed, problems)
        for line in result.problems:
            session.report.fail(line)
        for line in result.warnings:
            logger.warning(line)
        session.report.add("warnings", len(result.warnings))
        session.report.add("scored", int(result.metrics["n"]))
        md, csv_path = store.write_report(session.con, Path(out_dir) if out_dir else DEFAULT_OUT_DIR)
        create_markdown_artifact(key="aquaechr-report", markdown=md.read_text(encoding="utf-8"),
                                 description=f"AQuAECHR metrics (latest run per configuration); CSV: {csv_path}")
        logger.info("aquaechr %s: corpus = %s; report %s, csv %s", system, passages.description, md, csv_path)
        publish_counts(session.report, "eval-aquaechr", f"AQuAECHR eval {system}")
        report = session.report
    return final_state(report)
