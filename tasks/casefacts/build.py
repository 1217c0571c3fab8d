"""The CaseFacts build as a whole: backends and embedder (with the model-family check), the stages
of caseforge.tasks.casefacts.pipeline in order, the dataset gate. No Prefect here: the flow passes a
`stage` wrapper that makes each stage a task."""
from __future__ import annotations

from caseforge.families import check_families
from caseforge.llm.config import Backends
from caseforge.session import run_session
from caseforge.settings import Settings
from caseforge.stage_report import StageReport
from caseforge.tasks.casefacts import pipeline
from caseforge.tasks.casefacts.config import BuildConfig
from caseforge.tasks.casefacts.dataset_gate import gate_dataset
from caseforge.tasks.casefacts.embed import get_embedder


def make_config(backends: Backends, limit: int | None = None, seed: int = 13,
                embedder: str = "sentence-transformers", embedder_path: str | None = None, min_positives: int = 5,
                allow_same_family: bool = False) -> BuildConfig:
    """A build configuration whose generator and validator are the models the backends resolve to.

    Raises caseforge.families.SameFamily when both are of one family, unless allowed."""
    generator, validator = backends.model("generator", "casefacts.generate"), backends.model("validator",
                                                                                             "casefacts.factuality")
    check_families(generator, validator, allow_same_family)
    return BuildConfig(generator_model=generator, validator_model=validator, seed=seed, limit=limit,
                       embedder=embedder, embedder_path=embedder_path, min_positives=min_positives,
                       allow_same_family=allow_same_family)


def build(settings: Settings, config: BuildConfig, backends: Backends | dict,
          stage=pipeline.plain_stage, embedder=None) -> StageReport:
    """Claims → factuality → same-case → embeddings → calibrated windows → cross-case → overrulings
    (temporal rule) → overlap merges → negations → splits, each stage gated into its own table; then
    the dataset-level gate."""
    with run_session(settings, "build", "casefacts") as session:
        ctx = pipeline.BuildContext(session.con, session.run_id, session.report, config, backends,
                                    embedder or get_embedder(config.embedder, config.embedder_path))
        if config.allow_same_family and check_families(config.generator_model or "", config.validator_model or "",
                                                       allow_same=True):
            session.report.add("same_family_warning")
        claims = pipeline.run_pipeline(ctx, stage=stage)
        # A build whose checks removed every claim is an outcome, not a crash: its summary says what
        # survived where, and the release holds what there is. Anything else the dataset gate finds fails it.
        for reason in gate_dataset(claims, ctx.cases) if len(claims) else []:
            session.report.fail(f"dataset gate: {reason}")
        for label, n in claims["label"].value_counts().items() if len(claims) else []:
            session.report.add(f"claims.{label}", int(n))
    return session.report
