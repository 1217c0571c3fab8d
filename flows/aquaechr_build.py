"""Prefect flow: build AQuAECHR question–answer pairs from the guides in the warehouse."""
from __future__ import annotations

from prefect import flow

from caseforge.artifacts import publish_report
from caseforge.flows.states import as_tasks, ends_as_stopped, final_state
from caseforge.settings import load_settings
from caseforge.tasks.aquaechr import build
from caseforge.tasks.aquaechr.strategies import parse_strategies

PREFECT_STEPS = as_tasks(build.Steps(), "aquaechr")


@flow(name="aquaechr-build", log_prints=True)
@ends_as_stopped
def aquaechr_build(db: str | None = None, strategies: str | None = None, guides: list[str] | None = None,
                   llm: str | None = None, model: str | None = None, judge_model: str | None = None,
                   replay_file: str | None = None, limit: int | None = None, low_quality_at: int = 3,
                   embedding_model: str | None = None, backend=None, judge_backend=None, embedder=None):
    """Generate (cascade for the search strategies), judge, filter and load curated.aquaechr_qa.

    `backend`, `judge_backend` and a light `embedder` may be passed in (test doubles); otherwise backend and
    models are the arguments where given, the settings file's otherwise (caseforge.llm.config)."""
    config = build.BuildConfig(strategies=parse_strategies(strategies), guides=guides, limit=limit,
                               low_quality_at=low_quality_at)
    backends = build.make_backends(llm, model, judge_model, replay_file, backend, judge_backend)
    report = build.run(load_settings(db), config, backends, embedding_model, embedder, steps=PREFECT_STEPS)
    publish_report(report, "aquaechr-build", "AQuAECHR build")
    return final_state(report)
