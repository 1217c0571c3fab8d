"""Prefect flow: build the CaseFacts dataset from curated.scotus_cases, one task per stage."""
from __future__ import annotations

import argparse
import sys

from caseforge.orchestration import quiet_prefect_defaults

quiet_prefect_defaults()

from prefect import flow, get_run_logger, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from caseforge.config import settings as load_settings  # noqa: E402
from caseforge.orchestration import final_state, publish_counts, run_session  # noqa: E402
from caseforge.tasks.casefacts import pipeline  # noqa: E402
from caseforge.tasks.casefacts.build import make_context_parts  # noqa: E402
from caseforge.tasks.casefacts.config import BuildConfig  # noqa: E402
from caseforge.tasks.casefacts.dataset_gate import gate_dataset  # noqa: E402


_TASKS: dict[str, object] = {}


def _stage(name, fn):
    """Each pipeline stage as its own Prefect task (made once per stage)."""
    if name not in _TASKS:
        _TASKS[name] = task(name=f"casefacts-{name}", cache_policy=NO_CACHE)(fn)
    return _TASKS[name]


@flow(name="casefacts-build", log_prints=True)
def casefacts_build(db: str | None = None, config: BuildConfig = BuildConfig(), backend: str = "replay",
                    replay_file: str | None = None):
    """Claims → factuality → same-case → embeddings → calibrated windows → cross-case → overrulings
    (temporal rule) → overlap merges → negations → splits, each stage gated into its own table."""
    logger = get_run_logger()
    settings = load_settings(db)
    with run_session(settings, "build", "casefacts") as session:
        ctx = pipeline.BuildContext(session.con, session.run_id, session.report, config,
                                    *make_context_parts(config, backend, replay_file, session.report))
        claims = pipeline.run_pipeline(ctx, stage=_stage)
        for reason in gate_dataset(claims, ctx.cases):
            session.report.fail(f"dataset gate: {reason}")
        for label, n in claims["label"].value_counts().items() if len(claims) else []:
            session.report.add(f"claims.{label}", int(n))
        report = session.report
    logger.info("casefacts: %s", ", ".join(f"{k}={v}" for k, v in sorted(report.counts.items())))
    publish_counts(report, "casefacts-build", "CaseFacts build")
    return final_state(report)


def run_casefacts_command(args: argparse.Namespace) -> int:
    from caseforge.cli import CommandFailed
    from caseforge.commands.ingest import report_state
    from caseforge.tasks.casefacts.families import check_families

    defaults = BuildConfig()
    config = BuildConfig(generator_model=args.model or defaults.generator_model,
                         validator_model=args.validator_model or defaults.validator_model,
                         seed=args.seed, limit=args.limit, embedder=args.embedder,
                         embedder_path=args.embedder_path, allow_same_family=args.allow_same_family,
                         min_positives=args.min_positives)
    try:
        check_families(config.generator_model, config.validator_model, config.allow_same_family)
    except ValueError as exc:
        raise CommandFailed([str(exc)]) from exc
    state = casefacts_build(db=args.db, config=config, backend=args.llm, replay_file=args.replay_file,
                            return_state=True)
    sys.stdout.flush()
    return report_state(state)
