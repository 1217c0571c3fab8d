"""The CaseFacts build as a whole: backends and embedder (with the model-family check), the stages
of caseforge.tasks.casefacts.pipeline in order, the dataset gate. No Prefect here: the flow passes a
`stage` wrapper that makes each stage a task."""
from __future__ import annotations

from caseforge.config import Settings
from caseforge.families import check_families
from caseforge.llm import get_backend
from caseforge.runs import StageReport
from caseforge.session import run_session
from caseforge.tasks.casefacts import pipeline
from caseforge.tasks.casefacts.config import BuildConfig
from caseforge.tasks.casefacts.dataset_gate import gate_dataset
from caseforge.tasks.casefacts.embed import get_embedder


def make_config(model: str | None = None, validator_model: str | None = None, limit: int | None = None,
                seed: int = 13, embedder: str = "sentence-transformers", embedder_path: str | None = None,
                min_positives: int = 5, allow_same_family: bool = False) -> BuildConfig:
    """A build configuration from plain options (None: the default model of that role).

    Raises caseforge.families.SameFamily when generator and validator share a family, unless allowed."""
    defaults = BuildConfig()
    config = BuildConfig(generator_model=model or defaults.generator_model,
                         validator_model=validator_model or defaults.validator_model, seed=seed, limit=limit,
                         embedder=embedder, embedder_path=embedder_path, min_positives=min_positives,
                         allow_same_family=allow_same_family)
    check_families(config.generator_model, config.validator_model, config.allow_same_family)
    return config


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


def build(settings: Settings, config: BuildConfig, llm: str = "replay", replay_file: str | None = None,
          stage=pipeline.plain_stage) -> StageReport:
    """Claims → factuality → same-case → embeddings → calibrated windows → cross-case → overrulings
    (temporal rule) → overlap merges → negations → splits, each stage gated into its own table; then
    the dataset-level gate."""
    with run_session(settings, "build", "casefacts") as session:
        ctx = pipeline.BuildContext(session.con, session.run_id, session.report, config,
                                    *make_context_parts(config, llm, replay_file, session.report))
        claims = pipeline.run_pipeline(ctx, stage=stage)
        for reason in gate_dataset(claims, ctx.cases):
            session.report.fail(f"dataset gate: {reason}")
        for label, n in claims["label"].value_counts().items() if len(claims) else []:
            session.report.add(f"claims.{label}", int(n))
    return session.report
