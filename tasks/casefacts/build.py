"""Backends and embedder for a build, with the model-family check."""
from __future__ import annotations

from caseforge.llm import get_backend
from caseforge.runs import StageReport
from caseforge.tasks.casefacts.config import BuildConfig
from caseforge.tasks.casefacts.embed import get_embedder
from caseforge.tasks.casefacts.families import check_families


def make_context_parts(config: BuildConfig, backend: str, replay_file: str | None, report: StageReport,
                       backends: dict | None = None, embedder=None) -> tuple[dict, object]:
    warning = check_families(config.generator_model, config.validator_model, config.allow_same_family)
    if warning:
        report.add("same_family_warning")
    if backends is None:
        options = {"replay_file": replay_file} if replay_file else {}
        backends = {"generator": get_backend(backend, config.generator_model, **options),
                    "validator": get_backend(backend, config.validator_model, **options)}
    return backends, embedder or get_embedder(config.embedder, config.embedder_path)
