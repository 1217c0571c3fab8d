"""Prefect flow: build the CaseFacts dataset from curated.scotus_cases, one task per stage."""
from __future__ import annotations

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from caseforge.artifacts import publish_report
from caseforge.flows.states import ends_as_stopped, final_state
from caseforge.llm.config import Backends
from caseforge.settings import load_settings
from caseforge.tasks.casefacts.build import build, make_config

_TASKS: dict[str, object] = {}


def as_task(name, fn):
    """Each pipeline stage as its own Prefect task (made once per stage)."""
    if name not in _TASKS:
        _TASKS[name] = task(name=f"casefacts-{name}", cache_policy=NO_CACHE)(fn)
    return _TASKS[name]


@flow(name="casefacts-build", log_prints=True)
@ends_as_stopped
def casefacts_build(db: str | None = None, llm: str | None = None, model: str | None = None,
                    validator_model: str | None = None, replay_file: str | None = None, limit: int | None = None,
                    seed: int = 13, embedder: str = "sentence-transformers", embedder_path: str | None = None,
                    min_positives: int = 5, allow_same_family: bool = False):
    """Claims → factuality → same-case → embeddings → calibrated windows → cross-case → overrulings
    (temporal rule) → overlap merges → negations → splits, each stage gated into its own table.

    Backend and models: the arguments where given, the settings file's otherwise (caseforge.llm.config)."""
    settings = load_settings(db)
    backends = Backends(llm, {"generator": model, "validator": validator_model}, settings=settings,
                        replay_file=replay_file)
    config = make_config(backends, limit, seed, embedder, embedder_path, min_positives, allow_same_family)
    report = build(settings, config, backends, stage=as_task)
    publish_report(report, "casefacts-build", "CaseFacts build")
    return final_state(report)
